package org.apache.spark.sql.skewagg.window

import org.apache.spark.sql.catalyst.expressions.{
  CumeDist, CurrentRow, DenseRank, Expression, NamedExpression, NTile, PercentRank, Rank,
  RangeFrame, RowFrame, RowNumber, SortOrder, SpecifiedWindowFrame, UnboundedFollowing,
  UnboundedPreceding, WindowExpression
}
import org.apache.spark.sql.catalyst.expressions.aggregate.{
  AggregateExpression, Average, Complete, Count, DeclarativeAggregate, Max, Min, Sum
}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{EvalModes, SkewAggConf}
import org.apache.spark.sql.types.{DataType, DecimalType, FractionalType, IntegralType}

/**
 * How a window function's rows are framed, for a split key: the whole partition (one value per
 * key), or growing from the partition's first row to the current row (ROWS) or to its last peer
 * (RANGE).
 */
sealed trait SplitFrame

object SplitFrame {
  case object Whole extends SplitFrame
  case object RunningRows extends SplitFrame
  case object RunningRange extends SplitFrame
}

/**
 * A window function a split key can compute exactly: `function`'s own update, merge and evaluate
 * expressions (Spark's `DeclarativeAggregate`, as Spark's window runs them) in `frame`.
 */
final case class SplitFunction(
    expression: WindowExpression,
    function: DeclarativeAggregate,
    frame: SplitFrame) {
  def dataType: DataType = expression.dataType
}

/**
 * Which windows a hot key can be split for, and why not: one place for the rule and the
 * explanation. A split key's rows are computed in ranges of the window's order, each seeded with
 * what the ranges before it hold, so a function is split when that seed is exact:
 *  - count, min, max, and sum / avg of integral or decimal (precision at most 28) values, over
 *    the whole partition or a running frame (ROWS or RANGE, UNBOUNDED PRECEDING to CURRENT ROW):
 *    the seed is the merge of the earlier ranges' partial buffers. Integral sums are merged
 *    wrapping (and ANSI overflow raised from the exact total); a decimal buffer of precision
 *    p + 10 cannot overflow before 2^31 rows of precision p <= 28. float / double sums, and avg
 *    of integral values (a double buffer), add in another order than Spark's, so an ORDER BY
 *    window keeps Spark's plan unless `spark.skewagg.window.split.floatingPoint.enabled`;
 *  - row_number, rank, dense_rank, percent_rank, cume_dist, ntile: the seed is the rows (or peer
 *    groups) of the earlier ranges, and the key's rows are its size `n`.
 * Everything else (sliding and shrinking frames, lag / lead,
 * first / last values, DISTINCT or FILTER aggregates, imperative aggregates) is refused.
 */
object WindowSplitSupport {

  /** The split functions of a window, or why it cannot be split. */
  def functions(
      windowExpression: Seq[NamedExpression],
      orderSpec: Seq[SortOrder],
      conf: SQLConf): Either[String, Seq[SplitFunction]] = {
    val expressions = windowExpression.flatMap(_.collect { case w: WindowExpression => w }).distinct
    val split = expressions.map(w => function(w, orderSpec.nonEmpty, conf))
    split.collectFirst { case Left(reason) => reason }.toLeft(split.collect { case Right(f) => f })
  }

  private def function(
      w: WindowExpression,
      ordered: Boolean,
      conf: SQLConf): Either[String, SplitFunction] = {
    val frame = w.windowSpec.frameSpecification match {
      case SpecifiedWindowFrame(_, UnboundedPreceding, UnboundedFollowing) => Some(SplitFrame.Whole)
      case SpecifiedWindowFrame(RowFrame, UnboundedPreceding, CurrentRow) =>
        Some(SplitFrame.RunningRows)
      case SpecifiedWindowFrame(RangeFrame, UnboundedPreceding, CurrentRow) =>
        Some(SplitFrame.RunningRange)
      case _ => None
    }
    val name = w.windowFunction.sql
    val supported: Either[String, DeclarativeAggregate] = w.windowFunction match {
      case r @ (_: RowNumber | _: Rank | _: DenseRank | _: PercentRank | _: CumeDist | _: NTile)
          if knownBuffer(r) =>
        Right(r.asInstanceOf[DeclarativeAggregate])
      case AggregateExpression(a: DeclarativeAggregate, Complete, false, None, _) =>
        aggregate(a, ordered, conf).map(reason => s"$name is not split: $reason").toLeft(a)
      case AggregateExpression(_, _, true, _, _) =>
        Left(s"$name is not split: DISTINCT aggregates are not.")
      case AggregateExpression(_, _, _, Some(_), _) =>
        Left(s"$name is not split: aggregates with FILTER are not.")
      case _ =>
        Left(s"$name is not split: only count, sum, avg, min, max, row_number, rank, " +
          "dense_rank, percent_rank, cume_dist and ntile are.")
    }
    supported.flatMap { function =>
      frame.map(SplitFunction(w, function, _)).toRight(
        s"the frame of $name (${w.windowSpec.frameSpecification.sql}) is not split: only " +
          "whole-partition frames and running frames (UNBOUNDED PRECEDING to CURRENT ROW) are.")
    }
  }

  /** A ranking function's buffer is as the split seeds it (SplitWindowFunctions). */
  private def knownBuffer(r: Expression): Boolean = r match {
    case _: RowNumber | _: CumeDist =>
      r.asInstanceOf[DeclarativeAggregate].aggBufferAttributes.size == 1
    case p: PercentRank => p.aggBufferAttributes.size == 2 + p.children.size
    case t: NTile => t.aggBufferAttributes.size == 5 && t.buckets.foldable
    case d: DenseRank => d.aggBufferAttributes.size == 1 + d.children.size
    case k: Rank => k.aggBufferAttributes.size == 2 + k.children.size
    case _ => false
  }

  /** Why the aggregate `a` cannot be split, if it cannot. */
  private def aggregate(a: DeclarativeAggregate, ordered: Boolean, conf: SQLConf): Option[String] =
    a match {
      case _: Count | _: Min | _: Max => None
      case s: Sum if EvalModes.of(s) == org.apache.spark.sql.catalyst.expressions.EvalMode.TRY =>
        Some("try_sum is not split.")
      case s: Sum => summed(s.child, ordered, integralInDouble = false, conf)
      case v: Average => summed(v.child, ordered, integralInDouble = true, conf)
      case _ => Some("only count, sum, avg, min and max aggregates are split.")
    }

  private def summed(
      child: Expression,
      ordered: Boolean,
      integralInDouble: Boolean,
      conf: SQLConf): Option[String] = {
    val floatingPoint = !ordered || conf.getConf(SkewAggConf.WINDOW_SPLIT_FLOATING_POINT_ENABLED)
    child.dataType match {
      case d: DecimalType if d.precision > MaxDecimalPrecision =>
        Some(s"decimals of precision above $MaxDecimalPrecision could overflow their sum in " +
          "another order than Spark's.")
      case _: DecimalType => None
      case _: IntegralType if !integralInDouble => None
      case _: IntegralType | _: FractionalType if floatingPoint => None
      case _: IntegralType | _: FractionalType =>
        Some("floating-point addition in another order than the window's could change the " +
          s"last digits (${SkewAggConf.WINDOW_SPLIT_FLOATING_POINT_ENABLED.key}=true allows it).")
      case other => Some(s"sums of ${other.simpleString} are not split.")
    }
  }

  /** Decimal sums buffer precision p + 10: 2^31 rows of precision 28 fit in 38 digits. */
  val MaxDecimalPrecision = 28
}
