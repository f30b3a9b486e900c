package org.apache.spark.sql.skewagg.window

import org.apache.spark.sql.catalyst.expressions.{
  CumeDist, CurrentRow, DenseRank, Expression, FrameLessOffsetWindowFunction, NamedExpression,
  NthValue, NTile, PercentRank, Rank, RangeFrame, RowFrame, RowNumber, SortOrder,
  SpecifiedWindowFrame, UnboundedFollowing, UnboundedPreceding, WindowExpression
}
import org.apache.spark.sql.catalyst.expressions.aggregate.{
  AggregateExpression, Average, Complete, Count, DeclarativeAggregate, First, Last, Max, Min, Sum
}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.SkewAggConf
import org.apache.spark.sql.skewagg.ansi.EvalModes
import org.apache.spark.sql.types.{
  DataType, DecimalType, FractionalType, IntegerType, IntegralType, LongType
}

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

/** A window function a split key can compute exactly. */
sealed trait SplitWindowFunction {
  def expression: WindowExpression
  def dataType: DataType = expression.dataType
}

/**
 * `function`'s own update, merge and evaluate expressions (Spark's `DeclarativeAggregate`, as
 * Spark's window runs them) in `frame`.
 */
final case class SplitFunction(
    expression: WindowExpression,
    function: DeclarativeAggregate,
    frame: SplitFrame)
    extends SplitWindowFunction

/**
 * lag (`offset` < 0) or lead (`offset` > 0): `input` of the row `|offset|` rows before or after
 * (counting only rows whose input is not null with `ignoreNulls`), else `default` of the row.
 */
final case class SplitOffset(expression: WindowExpression, function: FrameLessOffsetWindowFunction)
    extends SplitWindowFunction {
  val offset: Int = function.offset.eval().asInstanceOf[Int]
  def input: Expression = function.input
  def ignoreNulls: Boolean = function.ignoreNulls
}

/** `function` (Spark's `DeclarativeAggregate`) over a frame bounded on both sides. */
sealed trait SplitFrameAggregate extends SplitWindowFunction {
  def function: DeclarativeAggregate
}

/**
 * `function` (Spark's `DeclarativeAggregate`) over a bounded ROWS frame: the rows from `lower`
 * to `upper` rows of the current one (negative: before it), e.g. -6 to 0 for the last 7 rows.
 */
final case class SplitSlidingAggregate(
    expression: WindowExpression,
    function: DeclarativeAggregate,
    lower: Int,
    upper: Int)
    extends SplitFrameAggregate

/**
 * `function` (Spark's `DeclarativeAggregate`) over a bounded RANGE frame: the rows whose order
 * values lie from `lower` to `upper` of the current row's, each the current row's order values
 * (None: CURRENT ROW) or its value plus an offset as Spark's window adds them
 * ([[RangeFrameBound]]), e.g. `RANGE BETWEEN INTERVAL 7 DAYS PRECEDING AND CURRENT ROW`.
 */
final case class SplitRangeAggregate(
    expression: WindowExpression,
    function: DeclarativeAggregate,
    lower: Option[Expression],
    upper: Option[Expression])
    extends SplitFrameAggregate

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
 *  - first_value and last_value (with or without IGNORE NULLS), in the same frames: Spark's
 *    merge of the earlier ranges' buffers, in order. Ties are read in one order (the rows'
 *    bytes break them) by every pass of a split, so the values are those of one of the orders
 *    Spark's window may read ties in;
 *  - row_number, rank, dense_rank, percent_rank, cume_dist, ntile: the seed is the rows (or peer
 *    groups) of the earlier ranges, and the key's rows are its size `n`;
 *  - nth_value up to the [[MaxOffset]]th row, in the same frames: the seed is the n-th input of
 *    the earlier ranges' first inputs ([[SplitNthValues]]);
 *  - lag and lead (also IGNORE NULLS) by at most [[MaxOffset]] rows: the seed is the inputs of
 *    the last (lag) or first (lead) counted rows of the ranges before or after
 *    ([[SplitOffsets]]);
 *  - any declarative aggregate over a bounded ROWS frame (`ROWS BETWEEN 6 PRECEDING AND CURRENT
 *    ROW`) reaching at most [[MaxOffset]] rows: the seed is the rows of the ranges around it that
 *    the frames reach, and each frame is aggregated as Spark's sliding frame does
 *    ([[SplitSlidingFrames]]), floating point included;
 *  - any declarative aggregate over a bounded RANGE frame (`RANGE BETWEEN INTERVAL 7 DAYS
 *    PRECEDING AND CURRENT ROW`) in a window alone (not a chain): the seed is the rows of the
 *    ranges around it within the frames' reach, found at run time, and a key whose frames reach
 *    too far across an edge runs in Spark's window ([[SplitRangeFrames]]).
 * Without ORDER BY only what reads no order of the rows is split (`unordered`). Everything else
 * (frames bounded on one side only, DISTINCT or FILTER aggregates, imperative aggregates; bounded
 * frames where Spark aggregates them by a segment tree) is refused.
 */
object WindowSplitSupport {

  /**
   * The split functions of a window (`chained`: one of a chain of windows on the same keys), or
   * why it cannot be split.
   */
  def functions(
      windowExpression: Seq[NamedExpression],
      orderSpec: Seq[SortOrder],
      chained: Boolean,
      conf: SQLConf): Either[String, Seq[SplitWindowFunction]] = {
    val expressions = windowExpression.flatMap(_.collect { case w: WindowExpression => w }).distinct
    val split = expressions.map(w => function(w, orderSpec, chained, conf))
    split.collectFirst { case Left(reason) => reason }.toLeft(split.collect { case Right(f) => f })
  }

  private def function(
      w: WindowExpression,
      orderSpec: Seq[SortOrder],
      chained: Boolean,
      conf: SQLConf): Either[String, SplitWindowFunction] = {
    val ordered = orderSpec.nonEmpty
    w.windowFunction match {
      case o: FrameLessOffsetWindowFunction if !ordered =>
        Left(s"${w.windowFunction.sql} is not split: ${o.prettyName} without ORDER BY is not.")
      case o: FrameLessOffsetWindowFunction => offset(w, o)
      case _ if boundedRows(w).isDefined && !ordered =>
        Left(s"${w.windowFunction.sql} is not split: a ROWS frame without ORDER BY reads the " +
          "rows in the order they arrive, which a split does not keep.")
      case _ if (boundedRows(w).isDefined || boundedRange(w)) && segmentTree(conf) =>
        Left(
          s"${w.windowFunction.sql} is not split: Spark aggregates bounded frames by a segment " +
            s"tree (${SegmentTreeKey}=true), merging blocks in an order a split does not keep.")
      case _ if boundedRows(w).isDefined => sliding(w, boundedRows(w).get)
      case _ if boundedRange(w) && !ordered =>
        Left(s"${w.windowFunction.sql} is not split: a RANGE frame without ORDER BY is not.")
      case _ if boundedRange(w) && chained =>
        Left(s"${w.windowFunction.sql} is not split: a bounded RANGE frame in a chain of windows " +
          "is not (a key whose frames reach too far is found only as its window runs).")
      case _ if boundedRange(w) => range(w, orderSpec, conf)
      case _ => aggregateOrRank(w, ordered, conf).flatMap {
          case f: SplitFunction if !ordered => unordered(f, chained)
          case f => Right(f)
        }
    }
  }

  /**
   * `f` in a window without ORDER BY. Spark reads such a window's rows in the order they arrive,
   * and its decorrelation of `ORDER BY ... LIMIT` under a projection relies on that order (a
   * sort below the window's shuffle, `row_number()` without ORDER BY above it). Split are the
   * whole-partition aggregates that read no order, and first and last values of a window alone
   * (`chained` false): its hot key's rows stay in their map-output pieces, whose summaries merge
   * in map order, the order Spark's task reads them in. Refused: running frames (row_number,
   * ntile, running aggregates), nth_value, and first and last values in a chain (its rows are
   * routed by a hash of their columns).
   */
  private def unordered(f: SplitFunction, chained: Boolean): Either[String, SplitWindowFunction] = {
    val readsOrder = f.frame != SplitFrame.Whole || (f.function match {
      case _: NthValue => true
      case _: First | _: Last => chained
      case _ => false
    })
    if (!readsOrder) Right(f)
    else Left(s"${f.expression.windowFunction.sql} is not split: without ORDER BY" +
      (if (chained) " in a chain of windows" else "") + " it reads the rows in the order they " +
      "arrive (an order Spark's decorrelation of ORDER BY ... LIMIT relies on), which a split " +
      "does not keep.")
  }

  private def offset(
      w: WindowExpression,
      o: FrameLessOffsetWindowFunction): Either[String, SplitWindowFunction] = {
    val split = SplitOffset(w, o)
    val name = o.prettyName
    if (math.abs(split.offset) > MaxOffset) {
      Left(s"${w.windowFunction.sql} is not split: $name by more than $MaxOffset rows is not.")
    } else if (split.offset == 0) {
      Left(s"${w.windowFunction.sql} is not split: $name by 0 rows is not.")
    } else Right(split)
  }

  /** The bounds of `w`'s frame when it is a ROWS frame bounded on both sides. */
  private def boundedRows(w: WindowExpression): Option[(Int, Int)] = {
    def rows(bound: Expression): Option[Int] = bound match {
      case CurrentRow => Some(0)
      case e if e.foldable && e.dataType == IntegerType => Option(e.eval()).map(_.asInstanceOf[Int])
      case _ => None
    }
    w.windowSpec.frameSpecification match {
      case SpecifiedWindowFrame(RowFrame, lower, upper) =>
        for (l <- rows(lower); u <- rows(upper)) yield (l, u)
      case _ => None
    }
  }

  private def sliding(
      w: WindowExpression,
      bounds: (Int, Int)): Either[String, SplitWindowFunction] = {
    val name = w.windowFunction.sql
    val (lower, upper) = bounds
    if (math.max(math.abs(lower), math.abs(upper)) > MaxOffset) {
      Left(s"$name is not split: a ROWS frame reaching more than $MaxOffset rows is not.")
    } else {
      plainAggregate(
        w,
        "over a bounded ROWS frame, only declarative aggregates (sum, avg, " +
          "count, min, max, first, last, stddev, ...) are.")
        .map(SplitSlidingAggregate(w, _, lower, upper))
    }
  }

  /** Whether `w`'s frame is a RANGE frame bounded on both sides (CURRENT ROW or an offset). */
  private def boundedRange(w: WindowExpression): Boolean = w.windowSpec.frameSpecification match {
    case SpecifiedWindowFrame(RangeFrame, lower, upper) =>
      Seq(lower, upper).forall(b => b == CurrentRow || b.foldable)
    case _ => false
  }

  private def range(
      w: WindowExpression,
      orderSpec: Seq[SortOrder],
      conf: SQLConf): Either[String, SplitWindowFunction] = {
    val name = w.windowFunction.sql
    val SpecifiedWindowFrame(_, lower, upper) = w.windowSpec.frameSpecification
    def bound(b: Expression): Either[String, Option[Expression]] =
      if (b == CurrentRow) Right(None)
      else {
        RangeFrameBound(orderSpec.head, b, conf.sessionLocalTimeZone)
          .filter(_ => orderSpec.size == 1)
          .filter(_.dataType == orderSpec.head.dataType)
          .map(Some(_))
          .toRight(s"$name is not split: its RANGE frame's offset (${b.sql}) is not one Spark's " +
            s"window adds to ${orderSpec.map(_.sql).mkString(", ")}.")
      }
    for {
      l <- bound(lower)
      u <- bound(upper)
      a <- plainAggregate(
        w,
        "over a bounded RANGE frame, only declarative aggregates (sum, avg, count, min, max, " +
          "first, last, stddev, ...) are.")
    } yield SplitRangeAggregate(w, a, l, u)
  }

  /** Spark's segment tree for moving frames (Spark 4.2+, off by default; absent before). */
  private val SegmentTreeKey = "spark.sql.window.segmentTree.enabled"

  private def segmentTree(conf: SQLConf): Boolean =
    conf.getConfString(SegmentTreeKey, "false").trim.equalsIgnoreCase("true")

  /** `w`'s aggregate when a declarative one without DISTINCT or FILTER, or why it is not split. */
  private def plainAggregate(
      w: WindowExpression,
      others: String): Either[String, DeclarativeAggregate] = {
    val name = w.windowFunction.sql
    w.windowFunction match {
      case AggregateExpression(a: DeclarativeAggregate, Complete, false, None, _) => Right(a)
      case AggregateExpression(_, _, true, _, _) =>
        Left(s"$name is not split: DISTINCT aggregates are not.")
      case AggregateExpression(_, _, _, Some(_), _) =>
        Left(s"$name is not split: aggregates with FILTER are not.")
      case _ => Left(s"$name is not split: $others")
    }
  }

  private def aggregateOrRank(
      w: WindowExpression,
      ordered: Boolean,
      conf: SQLConf): Either[String, SplitWindowFunction] = {
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
      case n: NthValue if n.offset.eval().asInstanceOf[Int] > MaxOffset =>
        Left(s"$name is not split: nth_value beyond the ${MaxOffset}th row is not.")
      case n: NthValue if knownBuffer(n) => Right(n)
      case _ =>
        plainAggregate(
          w,
          "only count, sum, avg, min, max, first_value, last_value, nth_value, " +
            "row_number, rank, dense_rank, percent_rank, cume_dist, ntile, lag and lead are.")
          .flatMap { a =>
            aggregate(a, ordered, conf).map(reason => s"$name is not split: $reason").toLeft(a)
          }
    }
    supported.flatMap { function =>
      frame.map(SplitFunction(w, function, _)).toRight(
        s"the frame of $name (${w.windowSpec.frameSpecification.sql}) is not split: only " +
          "whole-partition frames, running frames (UNBOUNDED PRECEDING to CURRENT ROW) and ROWS " +
          "or RANGE frames bounded on both sides are.")
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
    case n: NthValue => n.aggBufferAttributes.map(_.dataType) == Seq(n.input.dataType, LongType)
    case _ => false
  }

  /** Why the aggregate `a` cannot be split, if it cannot. */
  private def aggregate(a: DeclarativeAggregate, ordered: Boolean, conf: SQLConf): Option[String] =
    a match {
      case _: Count | _: Min | _: Max | _: First | _: Last => None
      case s: Sum if EvalModes.of(s) == org.apache.spark.sql.catalyst.expressions.EvalMode.TRY =>
        Some("try_sum is not split.")
      case s: Sum => summed(s.child, ordered, integralInDouble = false, conf)
      case v: Average => summed(v.child, ordered, integralInDouble = true, conf)
      case _ => Some("only count, sum, avg, min, max, first and last aggregates are split.")
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

  /**
   * Whether `e` is deterministic but for first / last values, which Spark marks nondeterministic
   * because ties may be read in any order: the split reads them in one order in all its passes.
   */
  def deterministicButTies(e: Expression): Boolean = e.transformUp {
    case AggregateExpression(f @ (_: First | _: Last), _, _, _, _) => f.children.head
  }.deterministic

  /** The rows lag and lead may reach across splits (each split keeps that many inputs). */
  val MaxOffset = 1000

  /** Decimal sums buffer precision p + 10: 2^31 rows of precision 28 fit in 38 digits. */
  val MaxDecimalPrecision = 28
}
