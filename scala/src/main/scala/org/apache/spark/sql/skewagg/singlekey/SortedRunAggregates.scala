package org.apache.spark.sql.skewagg.singlekey

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, GenericInternalRow, UnsafeProjection}
import org.apache.spark.sql.catalyst.expressions.aggregate.{
  ImperativeAggregate, SkewAggModeKeys, TypedImperativeAggregate
}
import org.apache.spark.sql.catalyst.trees.{TernaryLike, UnaryLike}
import org.apache.spark.sql.catalyst.types.PhysicalDataType
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.execution.ExternalAppendOnlyUnsafeRowArray
import org.apache.spark.sql.skewagg.hotkey.SpillableRowArrays
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.types._

/**
 * Holistic aggregate functions that read one grouping key's values in ascending order (the
 * single-key operator sorts its input by the keys, then by this function's value), so they need
 * no value->count map:
 *  - [[SortedRunPercentile]]: Spark's `percentile` / `median` / `percentile_cont` /
 *    `percentile_disc`. It appends the key's non-null values (with their frequency) to a
 *    spillable row buffer, Spark's ExternalAppendOnlyUnsafeRowArray, and at the end of the key
 *    picks the values at the ranks the percentages need in one pass: memory is bounded by the
 *    buffer's in-memory threshold and the rest spills, whatever the key's size.
 *  - [[SortedRunMode]]: Spark's `mode`. It counts runs of equal values as they stream past and
 *    keeps only the best value so far: constant memory.
 * They reproduce Spark's `PercentileBase.getPercentile`, `PercentileDisc.getPercentile` and
 * `Mode.eval` arithmetic and tie-breaking exactly. They only run in Complete mode (no partial
 * buffers are ever serialized or merged), inside [[SingleKeyAggregateExec]].
 */
object SortedRunAggregates {
  private[skewagg] def unsupported(what: String): Nothing = throw new UnsupportedOperationException(
    s"$what: skewagg's sorted-run aggregates run only in Complete mode inside SingleKeyAggregate")

  /** Spark's `PercentileBase.toDoubleValue`. */
  def toDoubleValue(d: Any): Double = d match {
    case d: Decimal => d.toDouble
    case n: Number => n.doubleValue
  }
}

/** How a percentile function turns percentages into ranks (Spark's three calculations). */
sealed trait PercentileKind
object PercentileKind {

  /** `percentile`, `median`, `percentile_cont`: linear interpolation between two ranks. */
  case object Continuous extends PercentileKind

  /** `percentile_disc` with spark.sql.legacy.percentileDiscCalculation=true. */
  case object LegacyDiscrete extends PercentileKind

  /** `percentile_disc`: the value with the smallest cume_dist >= p. */
  case object Discrete extends PercentileKind
}

/** The key's non-null values with their frequencies, in ascending value order, spillable. */
final class SortedRun(
    valueType: DataType,
    toUnsafe: UnsafeProjection,
    inMemoryRows: Int,
    spillRows: Int) {
  private var rows: ExternalAppendOnlyUnsafeRowArray = _
  private val pair = new GenericInternalRow(2)
  var total: Long = 0L

  def add(value: Any, frequency: Long): Unit = {
    if (rows == null) rows = SpillableRowArrays.create(inMemoryRows, spillRows)
    pair.update(0, value)
    pair.update(1, frequency)
    rows.add(toUnsafe(pair))
    total += frequency
  }

  /**
   * The values at the ascending 0-based `ranks` (sorted, distinct), counting each value
   * `frequency` times, in one pass over the buffer.
   */
  def valuesAt(ranks: Array[Long]): Array[AnyRef] = {
    val found = new Array[AnyRef](ranks.length)
    var next = 0
    var seen = 0L
    val it = rows.generateIterator()
    while (next < ranks.length && it.hasNext) {
      val row = it.next()
      seen += row.getLong(1)
      if (ranks(next) < seen) {
        val value = InternalRow.copyValue(row.get(0, valueType)).asInstanceOf[AnyRef]
        while (next < ranks.length && ranks(next) < seen) {
          found(next) = value
          next += 1
        }
      }
    }
    found
  }

  /** Frees the buffer (memory and spill files); returns the bytes it spilled. */
  def release(): Long = {
    if (rows == null) return 0L
    val spilled = rows.spillSize
    rows.clear()
    rows = null
    total = 0L
    spilled
  }
}

/**
 * Spark's `Percentile` (also `median` and `percentile_cont`, which Spark replaces by it) and
 * `PercentileDisc`, computed from a key's values in ascending order of `child`.
 */
case class SortedRunPercentile(
    child: Expression,
    percentageExpression: Expression,
    frequencyExpression: Expression,
    kind: PercentileKind,
    reverse: Boolean,
    dataType: DataType,
    inMemoryRows: Int,
    spillRows: Int,
    spillSize: Option[SQLMetric] = None,
    mutableAggBufferOffset: Int = 0,
    inputAggBufferOffset: Int = 0)
    extends TypedImperativeAggregate[SortedRun] with TernaryLike[Expression] {
  import SortedRunAggregates._

  override def first: Expression = child
  override def second: Expression = percentageExpression
  override def third: Expression = frequencyExpression
  override def nullable: Boolean = true
  override def prettyName: String = "sorted_run_percentile"
  override protected def stringArgs: Iterator[Any] =
    Iterator(child, percentageExpression, frequencyExpression)

  @transient private lazy val returnArray = percentageExpression.dataType.isInstanceOf[ArrayType]
  @transient private lazy val percentages: Array[Double] = percentageExpression.eval() match {
    case num: Double => Array(num)
    case array: org.apache.spark.sql.catalyst.util.ArrayData => array.toDoubleArray()
  }

  /** (value, frequency) as a binary row; generated once per function instance, not per key. */
  @transient private lazy val toUnsafe =
    UnsafeProjection.create(Array[DataType](child.dataType, LongType))

  override def createAggregationBuffer(): SortedRun =
    new SortedRun(child.dataType, toUnsafe, inMemoryRows, spillRows)

  override def update(buffer: SortedRun, input: InternalRow): SortedRun = {
    val count = weight(input)
    if (count > 0) buffer.add(child.eval(input), count)
    buffer
  }

  /**
   * How many ranks `input` occupies: its frequency (1 without a frequency argument). As Spark:
   * rows whose value or frequency is null count 0, zero frequencies too, negatives fail.
   */
  private[skewagg] def weight(input: InternalRow): Long = {
    val frequency = frequencyExpression.eval(input)
    if (frequency == null || child.eval(input) == null) return 0L
    val count = frequency.asInstanceOf[Number].longValue()
    if (count < 0)
      throw AggregateErrors.negativeFrequency(frequencyExpression, count)
    count
  }

  override def eval(buffer: SortedRun): Any = {
    try {
      if (buffer.total == 0L) null
      else {
        val ranks = ranksNeeded(buffer.total)
        resultFrom(buffer.total, ranks.zip(buffer.valuesAt(ranks)).toMap)
      }
    } finally {
      val spilled = buffer.release()
      spillSize.foreach(_ += spilled)
    }
  }

  /** The 0-based rank, in Spark's sort direction (descending when `reverse`), as ascending. */
  private def ascending(rank: Long, total: Long): Long = if (reverse) total - 1 - rank else rank

  /** For each percentage: (position, lower rank, higher rank) in Spark's direction, as Spark. */
  private def positions(total: Long): Array[(Double, Long, Long)] = percentages.map { p =>
    kind match {
      case PercentileKind.Discrete =>
        val rank = math.max(math.ceil(total * p).toLong - 1, 0L)
        (total * p, rank, rank)
      case _ =>
        val position = (total - 1) * p
        (position, position.floor.toLong, position.ceil.toLong)
    }
  }

  /**
   * The ascending 0-based ranks (sorted, distinct) whose values the result over `total` ranked
   * values needs (none when `total` is 0).
   */
  private[skewagg] def ranksNeeded(total: Long): Array[Long] =
    if (total == 0L) Array.empty
    else positions(total).flatMap { case (_, l, h) =>
      Seq(ascending(l, total), ascending(h, total))
    }
      .distinct.sorted

  /** The ascending rank pairs the result interpolates between (two different ranks). */
  private[skewagg] def rankPairs(total: Long): Seq[(Long, Long)] =
    if (total == 0L || kind != PercentileKind.Continuous) Nil
    else positions(total).toSeq.collect {
      case (_, l, h) if l != h =>
        val (a, b) = (ascending(l, total), ascending(h, total))
        (math.min(a, b), math.max(a, b))
    }

  /**
   * The function's result over `total` ranked values, given the value at each of
   * `ranksNeeded(total)` (ascending ranks): Spark's `getPercentile` arithmetic. Null when `total`
   * is 0 (no non-null value).
   */
  private[skewagg] def resultFrom(total: Long, values: Map[Long, AnyRef]): Any = {
    if (total == 0L) return null
    val results = positions(total).toSeq.map { case (position, lower, higher) =>
      val lowerKey = values(ascending(lower, total))
      if (kind == PercentileKind.Discrete || higher == lower) {
        toDoubleValue(lowerKey)
      } else {
        val higherKey = values(ascending(higher, total))
        if (higherKey == lowerKey || kind == PercentileKind.LegacyDiscrete) {
          toDoubleValue(lowerKey)
        } else {
          PercentileInterpolation.between(
            position,
            lower,
            toDoubleValue(lowerKey),
            higher,
            toDoubleValue(higherKey))
        }
      }
    }
    output(results)
  }

  /** Spark's `PercentileBase.generateOutput`. */
  private def output(percentiles: Seq[Double]): Any = {
    val results = child.dataType match {
      case _: YearMonthIntervalType => percentiles.map(_.toInt)
      case _: DayTimeIntervalType => percentiles.map(_.toLong)
      case _ => percentiles
    }
    if (returnArray) new GenericArrayData(results) else results.head
  }

  override def merge(buffer: SortedRun, input: SortedRun): SortedRun = unsupported("merge")
  override def serialize(buffer: SortedRun): Array[Byte] = unsupported("serialize")
  override def deserialize(bytes: Array[Byte]): SortedRun = unsupported("deserialize")

  override def withNewMutableAggBufferOffset(offset: Int): ImperativeAggregate =
    copy(mutableAggBufferOffset = offset)
  override def withNewInputAggBufferOffset(offset: Int): ImperativeAggregate =
    copy(inputAggBufferOffset = offset)
  override protected def withNewChildrenInternal(
      first: Expression,
      second: Expression,
      third: Expression): SortedRunPercentile =
    copy(child = first, percentageExpression = second, frequencyExpression = third)
}

/** The state of [[SortedRunMode]]: the current run of equal values and the best value so far. */
final class ModeRun {

  /** Values of the current run (equal under the type's ordering, e.g. -0.0 and 0.0), counted. */
  val run = new java.util.LinkedHashMap[AnyRef, java.lang.Long]()
  var runValue: AnyRef = _
  var best: AnyRef = _
  var bestCount: Long = 0L
}

/**
 * Spark's `Mode`, from a key's values in ascending order of `child`: runs of equal values are
 * counted as they pass. Ties: with `reverseOpt = Some(false)` (`mode() WITHIN GROUP (ORDER BY v
 * DESC)`) Spark returns the largest tied value, with `Some(true)` (`ORDER BY v`, or
 * `mode(v, true)`) the smallest; with None Spark returns any tied value (whichever its hash map
 * yields first), and this returns the smallest. Values are counted as the running line's `mode`
 * counts them (`SkewAggModeKeys`: from Spark 4.2, -0.0 as 0.0).
 */
case class SortedRunMode(
    child: Expression,
    reverseOpt: Option[Boolean],
    mutableAggBufferOffset: Int = 0,
    inputAggBufferOffset: Int = 0)
    extends TypedImperativeAggregate[ModeRun] with UnaryLike[Expression] {
  import SortedRunAggregates._

  override def dataType: DataType = child.dataType
  override def nullable: Boolean = true
  override def prettyName: String = "sorted_run_mode"
  override protected def stringArgs: Iterator[Any] = Iterator(child)

  @transient private lazy val ordering =
    PhysicalDataType.ordering(child.dataType).asInstanceOf[Ordering[AnyRef]]

  /** The value Spark's `mode` counts an input value as (its line's key normalization). */
  @transient private lazy val countedAs = SkewAggModeKeys.normalizer(child.dataType)
  private def largestWins: Boolean = reverseOpt.contains(false)

  override def createAggregationBuffer(): ModeRun = new ModeRun

  override def update(buffer: ModeRun, input: InternalRow): ModeRun = {
    val value = child.eval(input)
    if (value != null) {
      val v = countedAs(value).asInstanceOf[AnyRef]
      if (buffer.runValue == null || !ordering.equiv(buffer.runValue, v)) {
        closeRun(buffer)
        buffer.runValue = InternalRow.copyValue(v).asInstanceOf[AnyRef]
      }
      // Spark counts values by equality (boxed), which can split an ordering-equal run in two.
      val key = if (buffer.run.containsKey(v)) v else InternalRow.copyValue(v).asInstanceOf[AnyRef]
      val seen = buffer.run.get(key)
      buffer.run.put(key, java.lang.Long.valueOf(if (seen == null) 1L else seen.longValue + 1L))
    }
    buffer
  }

  private def closeRun(buffer: ModeRun): Unit = {
    val it = buffer.run.entrySet().iterator()
    while (it.hasNext) {
      val e = it.next()
      val count: Long = e.getValue
      if (count > buffer.bestCount || (largestWins && count == buffer.bestCount)) {
        buffer.best = e.getKey
        buffer.bestCount = count
      }
    }
    buffer.run.clear()
  }

  override def eval(buffer: ModeRun): Any = {
    closeRun(buffer)
    buffer.best
  }

  override def merge(buffer: ModeRun, input: ModeRun): ModeRun = unsupported("merge")
  override def serialize(buffer: ModeRun): Array[Byte] = unsupported("serialize")
  override def deserialize(bytes: Array[Byte]): ModeRun = unsupported("deserialize")

  override def withNewMutableAggBufferOffset(offset: Int): ImperativeAggregate =
    copy(mutableAggBufferOffset = offset)
  override def withNewInputAggBufferOffset(offset: Int): ImperativeAggregate =
    copy(inputAggBufferOffset = offset)
  override protected def withNewChildInternal(newChild: Expression): SortedRunMode =
    copy(child = newChild)
}
