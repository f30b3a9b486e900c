package org.apache.spark.sql.skewagg.localagg

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute, AttributeMap, AttributeReference, Expression, GenericInternalRow, If,
  MutableProjection, NamedExpression, UnsafeProjection, UnsafeRow
}
import org.apache.spark.sql.catalyst.expressions.aggregate.{
  AggregateExpression, DeclarativeAggregate
}
import org.apache.spark.sql.execution.aggregate.AggregationIterator
import org.apache.spark.sql.execution.metric.SQLMetric

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
