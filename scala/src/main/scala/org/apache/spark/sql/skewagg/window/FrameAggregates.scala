package org.apache.spark.sql.skewagg.window

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute, AttributeReference, AttributeSet, JoinedRow, MutableProjection, SpecificInternalRow,
  UnsafeProjection, UnsafeRow, WindowExpression
}
import org.apache.spark.sql.catalyst.expressions.aggregate.DeclarativeAggregate

/**
 * The aggregates of a window over frames bounded on both sides (ROWS: [[SplitSlidingFrames]],
 * RANGE: [[SplitRangeFrames]]), bound to `input`: the columns they read (a frame's rows hold
 * these) and their results, after the rows their evaluation reads.
 */
private[window] abstract class BoundedFrames(
    functions: Seq[SplitFrameAggregate],
    input: Seq[Attribute])
    extends Serializable {

  /** The columns the aggregates read. */
  protected val read: Seq[Attribute] = {
    val references = AttributeSet(functions.flatMap(_.function.references))
    input.filter(references.contains)
  }

  /** The functions' results, after the rows the evaluation reads. */
  val resultAttributes: Seq[Attribute] =
    functions.map(f => AttributeReference("frame_result", f.dataType, f.expression.nullable)())

  /** The result attribute of each of the window's expressions over a bounded frame. */
  def results: Map[WindowExpression, Attribute] =
    functions.map(_.expression).zip(resultAttributes).toMap

  def isEmpty: Boolean = functions.isEmpty

  protected def reading(): UnsafeProjection = UnsafeProjection.create(read, input)

  /** The aggregates over frames of rows that hold [[read]] first (made in the task). */
  protected def aggregates(): FrameAggregates =
    new FrameAggregates(functions.map(_.function), read)
}

/**
 * Declarative aggregates over a frame: a run of rows holding the columns `read` (first, any
 * others after them), aggregated from scratch with each function's own initial, update and
 * evaluate expressions, in the rows' order. That is how Spark's sliding frame computes
 * (`SlidingWindowFunctionFrame` aggregates its buffer again whenever the frame moves), so the
 * results are Spark's to the last bit, floating-point sums included. Made in the task that
 * evaluates (generated code).
 */
private[window] final class FrameAggregates(
    functions: Seq[DeclarativeAggregate],
    read: Seq[Attribute]) {

  private val aggregates = functions.map { f =>
    val buffer = new SpecificInternalRow(f.aggBufferAttributes.map(_.dataType))
    val initialize = MutableProjection.create(f.initialValues).target(buffer)
    val update =
      MutableProjection.create(f.updateExpressions, f.aggBufferAttributes ++ read).target(buffer)
    val result = UnsafeProjection.create(Seq(f.evaluateExpression), f.aggBufferAttributes)
    (buffer, initialize, update, result)
  }
  private val join = new JoinedRow()

  /** The functions' results, by [[aggregate]]. */
  val results: SpecificInternalRow = new SpecificInternalRow(functions.map(_.dataType))

  /** Sets result `j` to function `j` over `rows(from)` to `rows(to)` (none when `to < from`). */
  def aggregate(j: Int, rows: Int => UnsafeRow, from: Int, to: Int): Unit = {
    val (buffer, initialize, update, result) = aggregates(j)
    initialize(InternalRow.empty)
    var i = from
    while (i <= to) {
      update(join(buffer, rows(i)))
      i += 1
    }
    val value = result(buffer)
    if (value.isNullAt(0)) results.setNullAt(j)
    else results.update(j, value.get(0, functions(j).dataType))
  }
}
