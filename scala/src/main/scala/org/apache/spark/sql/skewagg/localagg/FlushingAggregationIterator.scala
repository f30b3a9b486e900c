package org.apache.spark.sql.skewagg.localagg

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute, Expression, GenericInternalRow, MutableProjection, NamedExpression, UnsafeProjection,
  UnsafeRow
}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.execution.aggregate.AggregationIterator
import org.apache.spark.sql.execution.metric.SQLMetric

private[localagg] case class FlushingMetrics(
    rowsIn: SQLMetric,
    rowsOut: SQLMetric,
    flushes: SQLMetric,
    passedThrough: SQLMetric,
    learned: SQLMetric,
    keptKeysDropped: SQLMetric,
    probedOnTrial: SQLMetric)

/**
 * Per task: the map, the flushes and the pass-through mode of [[FlushingPartialAggregateExec]].
 *
 * Rows are pushed in by generated code (`passing`, `offer`, `passed`, `nextOutput`, `finish`; the
 * one-row partials of rows passed through are computed there, in the stage's loop) or pulled
 * from `input` as an iterator, when the operator runs without code generation.
 */
private[localagg] class FlushingAggregationIterator(
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
    run: Long,
    sketch: Option[(DistinctHashes, InternalRow => Long)],
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

  // The task's metrics and sketch (`countInto`): replaced when the state serves another task.
  private[this] var rowsIn: SQLMetric = _
  private[this] var rowsOut: SQLMetric = _
  private[this] var flushes: SQLMetric = _
  private[this] var passedThrough: SQLMetric = _
  private[this] var learned: SQLMetric = _
  private[this] var keptKeysDropped: SQLMetric = _
  private[this] var probedOnTrial: SQLMetric = _
  private[this] var sketched: DistinctHashes = _
  private[this] val keyHashOf = sketch.map(_._2).orNull
  countInto(sketch.map(_._1).orNull, metrics)

  /** Counts into a task's `metrics` and `sketch` (null without one). */
  private def countInto(sketch: DistinctHashes, metrics: FlushingMetrics): Unit = {
    rowsIn = metrics.rowsIn
    rowsOut = metrics.rowsOut
    flushes = metrics.flushes
    passedThrough = metrics.passedThrough
    learned = metrics.learned
    keptKeysDropped = metrics.keptKeysDropped
    probedOnTrial = metrics.probedOnTrial
    sketched = sketch
  }

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

  /** A row's one-row partial as expressions, when every function is declarative. */
  private[this] val oneRowPartialOfInput: Option[Seq[Expression]] =
    oneRowPartialExpressions(groupingExpressions, aggregateExpressions, aggregateFunctions.toSeq)

  /** ...in one projection: only rows pulled need it (generated code computes its own). */
  private[this] lazy val oneRowPartial: Option[UnsafeProjection] = oneRowPartialOfInput.map { e =>
    val projection = UnsafeProjection.create(e, inputAttributes)
    projection.initialize(partIndex)
    projection
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

  /** A batch that may decide early: relearning, or the first after an earlier task passed. */
  private[this] var relearning = LearnedReductions.passedThrough(run)
  private[this] val earlyMaxReduction = 1 + (minReduction - 1) / EarlyReductionDivisor
  private[this] val scratch = newBuffer()

  /** Rows per hash bucket of the shuffle key in a batch, when there is one. */
  private[this] val rowsPerShuffleBucket =
    shuffleKeyOf.map(_ => new Array[Long](1 << ShuffleBucketBits)).orNull

  /**
   * While rows pass through around kept keys, until `trialLength` rows were probed (`onTrial`): the
   * rows probed, those merged into the kept keys, and the share of their batch's rows the kept
   * keys held.
   */
  private[this] var onTrial = false
  private[this] var trialLength = 0L
  private[this] var probed = 0L
  private[this] var hits = 0L
  private[this] var keptShare = 0.0

  /** Entries being emitted by a flush (or at the end of the input). */
  private[this] var draining: GroupingKeyMap.Cursor[Entry] = null
  private[this] var finished = false

  /** Pulled: the next output row, or null. */
  private[this] var pending: UnsafeRow = null

  // Pushed rows.

  /** Whether the next row passes through without a look at the map (no heavy key is kept). */
  def passing: Boolean = !learning && oneRowPartialOfInput.isDefined && map.isEmpty

  /** Merges `row` into the map; false when it passes through instead (then call `passed`). */
  def offer(row: InternalRow): Boolean = {
    val entry = map.get(row)
    if (entry != null) {
      processRow(entry.buffer, row)
      entry.rows += 1
      rowsSinceFlush += 1
      if (onTrial) { probed += 1; hits += 1; probedOnTrial += 1 }
      true
    } else if (learning && map.size < capacity) {
      val e = new Entry(newBuffer())
      processRow(e.buffer, row)
      e.rows = 1
      map.put(row, e)
      rowsSinceFlush += 1
      if (relearning && map.size == earlyDecisionAt &&
        restReduction(heavyThreshold) < earlyMaxReduction) {
        flush(passThroughNext = true)
      }
      true
    } else if (learning) {
      val passThroughNext = rowsSinceFlush < minReduction * map.size
      LearnedReductions.learned(run, passThroughNext)
      flush(passThroughNext)
      offer(row)
    } else {
      if (onTrial) { probed += 1; probedOnTrial += 1 }
      false
    }
  }

  /** A row passed through: counts it, and learns afresh when it is time to. */
  def passed(): Unit = {
    passedThrough += 1
    rowsUntilLearning -= 1
    if (rowsUntilLearning <= 0) {
      flush(passThroughNext = false) // the heavy keys' buffers, then learn afresh
      learning = true
      relearning = true
    } else if (onTrial && probed >= trialLength) {
      judgeKeptKeys()
    }
  }

  /**
   * Ends the kept keys' trial: when the rows probed since merged into them at less than
   * `KeptKeysMinHitShare` (half) of the share of rows they held in the batch that kept them (a hot
   * shuffle key spread over many more values than the batch saw, each rarely seen again), their
   * buffers are emitted and rows pass through without a probe until the next learning.
   */
  private def judgeKeptKeys(): Unit = {
    onTrial = false
    val drop = hits < KeptKeysMinHitShare * keptShare * probed
    LearnedReductions.judged(run, drop)
    if (drop) {
      keptKeysDropped += 1
      flushes += 1
      val emitted = map
      map = newMap(0)
      rowsSinceFlush = 0
      draining = emitted.cursor()
    }
  }

  /** The input has ended: the map is emitted (after what a flush emitted, which it must be). */
  def finish(): Unit = if (!finished) {
    finished = true
    assert(draining == null, "the input ended while a flush was being emitted")
    if (!map.isEmpty) {
      if (learning) learned += rowsSinceFlush
      rowsSinceFlush = 0
      draining = map.cursor()
      map = newMap(0)
    }
  }

  /**
   * The next row a flush (or the end) emits, or null; valid until the next call. A kept key no
   * row merged into since its place was renewed holds only its initial buffer: it is skipped, so
   * the operator never emits more rows than it reads.
   */
  def nextOutput(): UnsafeRow = {
    if (draining == null) return null
    while (draining.advance()) {
      if (draining.value.rows > 0) return generateOutput(draining.key, draining.value.buffer)
    }
    draining = null
    null
  }

  /** Counts an output row, and adds its key to the sketch of the keys emitted. */
  def emitted(row: InternalRow): Unit = {
    rowsOut += 1
    if (sketched != null) sketched.add(keyHashOf(row))
  }

  /** Whether the input ended and everything was emitted: the state may serve another task. */
  def drained: Boolean = finished && draining == null

  /**
   * Makes a drained state new for another task of the same run, counting into that task's
   * `metrics` and `sketch` (null without one). The task learns first, as every task does; how
   * long relearning waits goes on from where the last task left it: the run's tasks read the
   * same kind of rows, so a run that keeps passing rows through relearns less often, as one long
   * task would.
   */
  def restart(sketch: DistinctHashes, metrics: FlushingMetrics): Unit = {
    assert(drained, "only a drained state serves another task")
    countInto(sketch, metrics)
    map = newMap(capacity)
    learning = true
    onTrial = false
    rowsSinceFlush = 0
    rowsUntilLearning = 0
    relearning = LearnedReductions.passedThrough(run)
    finished = false
    pending = null
  }

  // Pulled rows: the operator without code generation.

  override def hasNext: Boolean = pending != null || advance()

  override def next(): UnsafeRow = {
    if (!hasNext) throw new NoSuchElementException
    val row = pending
    pending = null
    emitted(row)
    row
  }

  /** Finds the next output row; false when the input and the map are exhausted. */
  private def advance(): Boolean = {
    while (true) {
      pending = nextOutput()
      if (pending != null) return true
      if (input.hasNext) {
        val row = input.next()
        rowsIn += 1
        if (passing || !offer(row)) {
          passed()
          pending = onePartial(row)
          return true
        }
      } else if (!finished) {
        finish()
      } else {
        return false
      }
    }
    false
  }

  /** `row`'s one-row partial. */
  private def onePartial(row: InternalRow): UnsafeRow = oneRowPartial match {
    case Some(projection) => projection(row)
    case None =>
      initializeBuffer(scratch)
      processRow(scratch, row)
      generateOutput(groupingProjection(row), scratch)
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
  private def flush(passThroughNext: Boolean): Unit = {
    flushes += 1
    if (learning) learned += rowsSinceFlush
    val emitted = map
    if (passThroughNext) {
      val heavy = heavyThreshold
      val heavyBucket = heavyShuffleBucketRows(emitted)
      def heavyKeys(add: (UnsafeRow, Entry) => Unit): Unit = {
        val c = emitted.cursor()
        while (c.advance()) {
          if (c.value.rows >= heavy || !heavyBucket.isInfinite &&
            rowsPerShuffleBucket(shuffleBucket(c.key)) >= heavyBucket) {
            add(c.key, c.value)
          }
        }
      }
      var count = 0
      var keptRows = 0L
      heavyKeys((_, e) => { count += 1; keptRows += e.rows })
      map = newMap(count)
      heavyKeys((key, _) => map.putKey(key, new Entry(newBuffer())))
      onTrial = count > 0
      trialLength =
        if (earlyDecisionAt > 0 && LearnedReductions.droppedKeptKeys(run)) earlyDecisionAt
        else capacity
      probed = 0L
      hits = 0L
      keptShare = keptRows.toDouble / math.max(1L, rowsSinceFlush)
      learning = false
      rowsUntilLearning = relearnAfter
      relearnAfter = math.min(RelearnGrowth * relearnAfter, MaxRelearnCapacities * capacity)
    } else {
      if (learning) {
        relearnAfter = FirstRelearnCapacities * capacity
        relearning = false
      }
      onTrial = false
      map = newMap(capacity)
    }
    rowsSinceFlush = 0
    draining = emitted.cursor()
  }
}
