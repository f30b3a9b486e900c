package org.apache.spark.sql.skewagg.localagg

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute, AttributeMap, AttributeReference, AttributeSet, BindReferences, Expression,
  GenericInternalRow, If, MutableProjection, NamedExpression, UnsafeProjection, UnsafeRow, XXH64,
  XxHash64
}
import org.apache.spark.sql.catalyst.expressions.aggregate.{
  AggregateExpression, DeclarativeAggregate, Partial
}
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.aggregate.{AggregationIterator, BaseAggregateExec}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{BottomPartialAggregateExec, SkewAggConf}
import org.apache.spark.sql.types.{
  DataType, DateType, IntegerType, LongType, TimestampNTZType, TimestampType
}

/**
 * A partial aggregate that flushes instead of spilling, and aggregates only where it pays.
 *
 * It keeps at most `capacity` keys in memory. While it learns, every key goes into the map; when
 * the map is full it emits all its partial rows (a flush) and measures the batch: rows read per
 * key kept. When that reduction is at least `minReduction` it goes on learning; when it is lower,
 * it keeps only the batch's heavy keys (at least `HeavyFactor` = 8 times the batch's mean rows per
 * key), merges their rows in place and passes every other row through as a one-row partial, then
 * learns again after `FirstRelearnCapacities` = 16 x capacity rows, `RelearnGrowth` = twice as
 * many after each relearning that passes rows through again (at most `MaxRelearnCapacities` =
 * 256 x capacity). A hot key therefore leaves a task as a handful of rows, while
 * uniform keys cost one probe of a small map per row: never a spill, never a hash table of all
 * keys. A key of one integral column is mapped by its value ([[GroupingKeyMap.ByValue]]).
 *
 * `shuffleKeys`, when the exchange above hashes on fewer columns than the grouping key (a join
 * key or `repartition(k)` below `GROUP BY k, x`, a DISTINCT column), are that exchange's keys:
 * a batch then also keeps every key whose shuffle key is heavy, since it is the shuffle key that
 * puts rows in one task: a hot shuffle key spread over many grouping keys, each too rare to be
 * heavy alone, is merged too. Shuffle keys are counted in 2^`ShuffleBucketBits` = 4096 hash
 * buckets (no allocation per key); a bucket is heavy when it holds at least `HeavyFactor` times
 * the batch's mean rows per bucket used.
 *
 * Relearning decides early, at a quarter of the map (`EarlyDecisionFraction`, when that is at least
 * `EarlyDecisionMinKeys` = 1024 keys), when the keys other than the heavy ones merged fewer than
 * `1 + (minReduction - 1) / EarlyReductionDivisor` (10) rows per key: for uniform keys such a
 * quarter batch means the whole batch would reduce less than `minReduction`, so its other three
 * quarters would only cost map probes. The first batch of a task always fills the map: keys that
 * come in cycles longer than a quarter map (each customer once per day, say) repeat only later.
 *
 * Its output is exactly what Spark's partial aggregate emits (grouping keys and aggregation
 * buffers), possibly with several rows per key, which the final aggregate merges.
 *
 * With `sketchKeys`, it also adds the hash of every key it emits to a sketch ([[DistinctHashes]])
 * from which the driver estimates how many distinct keys all tasks emitted: how much a merge of
 * its rows after the shuffle would reduce them ([[DropUnneededMergeAfterShuffle]]).
 */
case class FlushingPartialAggregateExec(
    groupingExpressions: Seq[NamedExpression],
    aggregateExpressions: Seq[AggregateExpression],
    aggregateAttributes: Seq[Attribute],
    resultExpressions: Seq[NamedExpression],
    capacity: Int,
    minReduction: Double,
    shuffleKeys: Seq[Expression],
    sketchKeys: Boolean,
    child: SparkPlan) extends UnaryExecNode with BottomPartialAggregateExec {

  require(aggregateExpressions.forall(_.mode == Partial), "only partial aggregation flushes")

  override def output: Seq[Attribute] = resultExpressions.map(_.toAttribute)

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numInputRows" -> SQLMetrics.createMetric(sparkContext, "rows read"),
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "partial rows emitted"),
    "numFlushes" -> SQLMetrics.createMetric(sparkContext, "flushes of the key map"),
    "numPassedThrough" -> SQLMetrics.createMetric(
      sparkContext,
      "rows passed through (reduction too low)"),
    "numLearnedRows" -> SQLMetrics.createMetric(sparkContext, "rows merged while learning"))

  /** The sketch of the keys emitted, with `sketchKeys` (registered when first read: driver). */
  @transient lazy val emittedKeys: Option[DistinctHashes] = if (!sketchKeys) None
  else {
    val sketch = new DistinctHashes
    sparkContext.register(sketch, "distinct keys emitted")
    Some(sketch)
  }

  /** The shuffle keys bound to the grouping key's row; None when they are the whole key. */
  private def boundShuffleKeys: Option[Seq[Expression]] = {
    val keyAttributes = groupingExpressions.map(_.toAttribute)
    val keySet = AttributeSet(keyAttributes)
    val coversKey = keyAttributes.forall(a => shuffleKeys.exists(_.semanticEquals(a)))
    if (shuffleKeys.isEmpty || coversKey || !shuffleKeys.forall(_.references.subsetOf(keySet))) None
    else Some(shuffleKeys.map(BindReferences.bindReference(_, keyAttributes)))
  }

  override def simpleString(maxFields: Int): String =
    s"FlushingPartialAggregate(keys=${groupingExpressions.map(_.name).mkString("[", ", ", "]")}, " +
      s"functions=${aggregateExpressions.map(_.toString).mkString("[", ", ", "]")}, " +
      s"capacity=$capacity" +
      boundShuffleKeys.fold("")(_ =>
        shuffleKeys.map(_.sql).mkString(", heavy by [", ", ", "]")) + ")"

  override protected def doExecute(): RDD[InternalRow] = {
    val m = FlushingMetrics(
      longMetric("numInputRows"),
      longMetric("numOutputRows"),
      longMetric("numFlushes"),
      longMetric("numPassedThrough"),
      longMetric("numLearnedRows"))
    val input = child.output
    val shuffleKeysOfKey = boundShuffleKeys
    val sketch = emittedKeys
    val keyTypes = groupingExpressions.map(_.dataType)
    val keyAttributes = groupingExpressions.map(_.toAttribute)
    child.execute().mapPartitionsWithIndexInternal { (partIndex, rows) =>
      if (!rows.hasNext) Iterator.empty
      else {
        val aggregated = new FlushingAggregationIterator(
          partIndex,
          groupingExpressions,
          input,
          rows,
          aggregateExpressions,
          aggregateAttributes,
          resultExpressions,
          MutableProjection.create(_, _),
          capacity,
          minReduction,
          shuffleKeysOfKey.map(UnsafeProjection.create),
          m)
        sketch.fold[Iterator[InternalRow]](aggregated) { s =>
          val hash = FlushingPartialAggregateExec.keyHash(keyTypes, keyAttributes, output)
          aggregated.map { row => s.add(hash(row)); row }
        }
      }
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): FlushingPartialAggregateExec =
    copy(child = newChild)
}

object FlushingPartialAggregateExec {
  // The policy's constants, named once (the class comment says how they are used; the
  // measurements they were chosen on are in docs/rewrites.md, "The flushing local aggregate").

  /** Shuffle keys are counted in 2^12 = 4096 hash buckets. */
  private[skewagg] val ShuffleBucketBits = 12

  /** A key (or shuffle-key bucket) is heavy with at least this many times the mean rows. */
  private[localagg] val HeavyFactor = 8.0

  /** Rows passed through before the first relearning, in map capacities. */
  private[localagg] val FirstRelearnCapacities = 16L

  /** Each relearning that passes rows through again waits this many times longer... */
  private[localagg] val RelearnGrowth = 2L

  /** ...up to this many map capacities of rows. */
  private[localagg] val MaxRelearnCapacities = 256L

  /** A relearning batch may decide at this fraction of the map... */
  private[localagg] val EarlyDecisionFraction = 4

  /** ...when that is at least this many keys. */
  private[localagg] val EarlyDecisionMinKeys = 1024

  /**
   * Early, the other keys must merge fewer than `1 + (minReduction - 1) / EarlyReductionDivisor`
   * rows per key for the batch to pass rows through.
   */
  private[localagg] val EarlyReductionDivisor = 10

  /**
   * The 64-bit hash of an output row's grouping key (its first columns), for the sketch of the
   * keys emitted: of the value itself for one integral key (no projection per row), else
   * Spark's XxHash64 of the key columns. A null key hashes to the seed, as in XxHash64.
   */
  private[localagg] def keyHash(
      keyTypes: Seq[DataType],
      keyAttributes: Seq[Attribute],
      output: Seq[Attribute]): InternalRow => Long = keyTypes match {
    case Seq(LongType | TimestampType | TimestampNTZType) =>
      row => if (row.isNullAt(0)) KeyHashSeed else XXH64.hashLong(row.getLong(0), KeyHashSeed)
    case Seq(IntegerType | DateType) =>
      row => if (row.isNullAt(0)) KeyHashSeed else XXH64.hashInt(row.getInt(0), KeyHashSeed)
    case _ =>
      val projection = UnsafeProjection.create(Seq(new XxHash64(keyAttributes)), output)
      row => projection(row).getLong(0)
  }

  /** XxHash64's default seed. */
  private val KeyHashSeed = 42L

  /**
   * The flushing form of Spark's partial aggregate `partial` (as AggUtils planned it), sized by
   * the session's `spark.skewagg.localAggregate.*`, below an exchange on `shuffleKeys`; with
   * `sketchKeys`, sketching the keys it emits.
   */
  def from(
      partial: BaseAggregateExec,
      shuffleKeys: Seq[Expression],
      sketchKeys: Boolean = false): FlushingPartialAggregateExec =
    FlushingPartialAggregateExec(
      partial.groupingExpressions,
      partial.aggregateExpressions,
      partial.aggregateAttributes,
      partial.resultExpressions,
      SQLConf.get.getConf(SkewAggConf.LOCAL_AGGREGATE_CAPACITY),
      SQLConf.get.getConf(SkewAggConf.LOCAL_AGGREGATE_MIN_REDUCTION),
      shuffleKeys,
      sketchKeys,
      partial.child)
}

private case class FlushingMetrics(
    rowsIn: SQLMetric,
    rowsOut: SQLMetric,
    flushes: SQLMetric,
    passedThrough: SQLMetric,
    learned: SQLMetric)

/** Per task: the map, the flushes and the pass-through mode of [[FlushingPartialAggregateExec]]. */
private class FlushingAggregationIterator(
    partIndex: Int,
    groupingExpressions: Seq[NamedExpression],
    inputAttributes: Seq[Attribute],
    input: Iterator[InternalRow],
    aggregateExpressions: Seq[AggregateExpression],
    aggregateAttributes: Seq[Attribute],
    resultExpressions: Seq[NamedExpression],
    newMutableProjection: (Seq[Expression], Seq[Attribute]) => MutableProjection,
    capacity: Int,
    minReduction: Double,
    shuffleKeyOf: Option[UnsafeProjection],
    metrics: FlushingMetrics)
    extends AggregationIterator(
      partIndex,
      groupingExpressions,
      inputAttributes,
      aggregateExpressions,
      aggregateAttributes,
      0,
      resultExpressions,
      newMutableProjection) {
  import FlushingPartialAggregateExec._

  private[this] val FlushingMetrics(rowsIn, rowsOut, flushes, passedThrough, learned) = metrics

  /** A key's buffer and the rows merged into it since the last flush. */
  private final class Entry(val buffer: InternalRow) { var rows: Long = 0 }

  private[this] val bufferTypes = aggregateFunctions.flatMap(_.aggBufferAttributes).map(_.dataType)
  private[this] val unsafeBuffers = bufferTypes.forall(UnsafeRow.isMutable)
  private[this] val emptyUnsafeBuffer: UnsafeRow =
    if (unsafeBuffers) UnsafeProjection.create(bufferTypes.toArray).apply(
      new GenericInternalRow(bufferTypes.length)).copy()
    else null

  private def newBuffer(): InternalRow = {
    val buffer =
      if (unsafeBuffers) emptyUnsafeBuffer.copy() else new GenericInternalRow(bufferTypes.length)
    initializeBuffer(buffer)
    buffer
  }

  /**
   * When every function is declarative: a row's one-row partial in a single projection (the
   * update expressions over the initial buffer values), for rows passed through.
   */
  private[this] val oneRowPartial: Option[UnsafeProjection] = {
    val declarative = aggregateExpressions.zip(aggregateFunctions).collect {
      case (ae, d: DeclarativeAggregate) => (ae, d)
    }
    if (declarative.size != aggregateExpressions.size) None
    else {
      val buffers = declarative.flatMap { case (ae, d) =>
        val initial = AttributeMap(d.aggBufferAttributes.zip(d.initialValues))
        d.updateExpressions.zip(d.initialValues).map { case (update, init) =>
          val once =
            update.transform { case a: AttributeReference if initial.contains(a) => initial(a) }
          ae.filter.map(f => If(f, once, init)).getOrElse(once)
        }
      }
      val projection = UnsafeProjection.create(groupingExpressions ++ buffers, inputAttributes)
      projection.initialize(partIndex)
      Some(projection)
    }
  }

  private[this] val newMap: Int => GroupingKeyMap[Entry] =
    GroupingKeyMap.constructor(groupingExpressions, inputAttributes, groupingProjection)

  private[this] var map = newMap(capacity)
  private[this] var learning = true
  private[this] var rowsSinceFlush = 0L
  private[this] var rowsUntilLearning = 0L

  /** Rows passed through before learning again: doubles while relearning finds the same. */
  private[this] var relearnAfter = FirstRelearnCapacities * capacity

  /** The map size at which a relearning batch may decide early (0: never). */
  private[this] val earlyDecisionAt = {
    val at = capacity / EarlyDecisionFraction
    if (at >= EarlyDecisionMinKeys) at else 0
  }
  private[this] var relearning = false
  private[this] val earlyMaxReduction = 1 + (minReduction - 1) / EarlyReductionDivisor
  private[this] val scratch = newBuffer()

  /** Rows per hash bucket of the shuffle key in a batch, when there is one. */
  private[this] val rowsPerShuffleBucket =
    shuffleKeyOf.map(_ => new Array[Long](1 << ShuffleBucketBits)).orNull

  /** Entries being emitted by a flush (or at the end), and the row that triggered the flush. */
  private[this] var draining: GroupingKeyMap.Cursor[Entry] = null
  private[this] var deferred: InternalRow = null
  private[this] var pending: UnsafeRow = null

  override def hasNext: Boolean = pending != null || advance()

  override def next(): UnsafeRow = {
    if (!hasNext) throw new NoSuchElementException
    val row = pending
    pending = null
    rowsOut += 1
    row
  }

  /** Finds the next output row; false when the input and the map are exhausted. */
  private def advance(): Boolean = {
    while (true) {
      if (draining != null) {
        if (draining.advance()) {
          pending = generateOutput(draining.key, draining.value.buffer)
          return true
        }
        draining = null
        if (deferred != null) {
          val row = deferred
          deferred = null
          if (consume(row)) return true
        }
      } else if (input.hasNext) {
        rowsIn += 1
        if (consume(input.next())) return true
      } else if (!map.isEmpty) {
        if (learning) learned += rowsSinceFlush
        rowsSinceFlush = 0
        draining = map.cursor()
        map = newMap(0)
      } else {
        return false
      }
    }
    false
  }

  /** Merges `row` into the map; true when it produced an output row (`pending`) instead. */
  private def consume(row: InternalRow): Boolean = {
    if (!learning && oneRowPartial.isDefined && map.isEmpty) return passThrough(row)
    val entry = map.get(row)
    if (entry != null) {
      processRow(entry.buffer, row)
      entry.rows += 1
      rowsSinceFlush += 1
      false
    } else if (learning && map.size < capacity) {
      val e = new Entry(newBuffer())
      processRow(e.buffer, row)
      e.rows = 1
      map.put(row, e)
      rowsSinceFlush += 1
      if (relearning && map.size == earlyDecisionAt &&
        restReduction(heavyThreshold) < earlyMaxReduction) {
        flush(null, passThroughNext = true)
      }
      false
    } else if (learning) {
      flush(row.copy(), passThroughNext = rowsSinceFlush < minReduction * map.size)
      false
    } else {
      passThrough(row)
    }
  }

  /** `row` is not worth a place in the map: its one-row partial is the next output row. */
  private def passThrough(row: InternalRow): Boolean = {
    passedThrough += 1
    rowsUntilLearning -= 1
    if (rowsUntilLearning <= 0) {
      flush(null, passThroughNext = false) // the heavy keys' buffers, then learn afresh
      learning = true
      relearning = true
    }
    pending = oneRowPartial match {
      case Some(projection) => projection(row)
      case None =>
        initializeBuffer(scratch)
        processRow(scratch, row)
        generateOutput(groupingProjection(row), scratch)
    }
    true
  }

  /** A batch's heavy keys merged at least this many rows: 8 times its mean rows per key. */
  private def heavyThreshold: Double = heavyAmong(map.size)

  /** Heavy among `n` keys (or buckets): at least 8 times the batch's mean rows per one. */
  private def heavyAmong(n: Int): Double = HeavyFactor * rowsSinceFlush / math.max(1, n)

  /** The hash bucket of a grouping key's shuffle key: the top bits of its Murmur3 hash. */
  private def shuffleBucket(key: UnsafeRow): Int =
    shuffleKeyOf.get(key).hashCode() >>> (32 - ShuffleBucketBits)

  /**
   * Counts `batch`'s rows per shuffle-key bucket (in `rowsPerShuffleBucket`) and returns the rows
   * a heavy bucket holds, 8 times the mean per bucket used; infinite when there is no shuffle key
   * or no bucket is heavy.
   */
  private def heavyShuffleBucketRows(batch: GroupingKeyMap[Entry]): Double = {
    if (rowsPerShuffleBucket == null) return Double.PositiveInfinity
    java.util.Arrays.fill(rowsPerShuffleBucket, 0L)
    var used = 0
    val c = batch.cursor()
    while (c.advance()) {
      val b = shuffleBucket(c.key)
      if (rowsPerShuffleBucket(b) == 0) used += 1
      rowsPerShuffleBucket(b) += c.value.rows
    }
    val heavy = heavyAmong(used)
    if (rowsPerShuffleBucket.exists(_ >= heavy)) heavy else Double.PositiveInfinity
  }

  /** Rows per key merged by the batch's keys that are not heavy. */
  private def restReduction(heavy: Double): Double = {
    var keys, rows = 0L
    val c = map.cursor()
    while (c.advance()) if (c.value.rows < heavy) { keys += 1; rows += c.value.rows }
    rows.toDouble / math.max(1, keys)
  }

  /**
   * Emits the map. When a learning batch reduced too little (`passThroughNext`), keeps the heavy
   * keys' places (their buffers are emitted and renewed) and stops learning for a while.
   */
  private def flush(trigger: InternalRow, passThroughNext: Boolean): Unit = {
    flushes += 1
    if (learning) learned += rowsSinceFlush
    val emitted = map
    if (passThroughNext) {
      val heavy = heavyThreshold
      val heavyBucket = heavyShuffleBucketRows(emitted)
      def heavyKeys(add: UnsafeRow => Unit): Unit = {
        val c = emitted.cursor()
        while (c.advance()) {
          if (c.value.rows >= heavy || !heavyBucket.isInfinite &&
            rowsPerShuffleBucket(shuffleBucket(c.key)) >= heavyBucket) {
            add(c.key)
          }
        }
      }
      var count = 0
      heavyKeys(_ => count += 1)
      map = newMap(count)
      heavyKeys(key => map.putKey(key, new Entry(newBuffer())))
      learning = false
      rowsUntilLearning = relearnAfter
      relearnAfter = math.min(RelearnGrowth * relearnAfter, MaxRelearnCapacities * capacity)
    } else {
      if (learning) {
        relearnAfter = FirstRelearnCapacities * capacity
        relearning = false
      }
      map = newMap(capacity)
    }
    rowsSinceFlush = 0
    draining = emitted.cursor()
    deferred = trigger
  }
}
