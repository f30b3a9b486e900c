package org.apache.spark.sql.skewagg.localagg

import org.apache.spark.sql.catalyst.expressions.{
  Abs, Add, Alias, And, Attribute, AtLeastNNonNulls, BinaryArithmetic, BinaryComparison,
  BoundReference, CaseWhen, Cast, Coalesce, Divide, EvalMode, Expression, If, In, InSet,
  IntegralDivide, IsNaN, IsNotNull, IsNull, Literal, KnownFloatingPointNormalized, KnownNotNull,
  Multiply, NaNvl, Not, Or, Pmod, Remainder, Subtract, UnaryMinus, UnscaledValue,
  UserDefinedExpression
}
import org.apache.spark.sql.catalyst.expressions.aggregate.{
  AggregateExpression, Average, BitAggregate, CentralMomentAgg, CollectList, CollectSet, Corr,
  Count, Covariance, First, HyperLogLogPlusPlus, Last, Max, MaxMinBy, Min, Percentile, Sum
}
import org.apache.spark.sql.catalyst.optimizer.NormalizeNaNAndZero
import org.apache.spark.sql.skewagg.ansi.{EvalModes, WrappingLongSum}
import org.apache.spark.sql.types.{
  AtomicType, DataType, DayTimeIntervalType, Decimal, DecimalType, DoubleType, FloatType,
  IntegralType, NumericType, StringType, YearMonthIntervalType
}

/**
 * What may throw on some row, for a rewrite that aggregates rows Spark's plan never aggregates
 * (the rows a join drops): Spark would answer a query that the rewrite would fail. Conservative:
 * a part may fail unless it is known not to. Known not to fail: columns and constants,
 * conditions, comparisons and null handling, and what Spark's optimizer adds (unscaled decimals,
 * normalized floating point); casts that cannot fail in their mode; arithmetic that cannot fail
 * in its mode or whose result type holds every result (floating point, decimals under 38
 * digits) and, for a division, whose divisor is a constant other than 0; Spark's algebraic and
 * collecting aggregates. User code (UDFs, UDAFs, Aggregators) may fail.
 */
object RowFailures {

  /**
   * The SQL of the first part of `a` (its function, its inputs, its FILTER) that may fail on
   * some row, if any; user-defined parts count as failing unless `trustUserCode`.
   */
  def of(a: AggregateExpression, trustUserCode: Boolean): Option[String] = {
    def fails(e: Expression): Boolean = e match {
      case _: UserDefinedExpression => !trustUserCode
      case _ => mayFail(e)
    }
    val function = a.aggregateFunction
    if (!safeFunction(function) && fails(function)) Some(a.sql)
    else (function.children ++ a.filter).flatMap(_.find(fails)).headOption.map(_.sql)
  }

  private def safeFunction(f: Expression): Boolean = f match {
    // Integral sums in ANSI mode are [[WrappingLongSum]]s by now; decimal sums fail only where
    // their result is evaluated; interval sums fail on overflow in every mode.
    case s: Sum => !interval(s.child.dataType)
    case avg: Average => !interval(avg.child.dataType)
    case _: WrappingLongSum | _: Count | _: Min | _: Max | _: First | _: Last => true
    case _: MaxMinBy | _: BitAggregate => true
    case _: CentralMomentAgg | _: Corr | _: Covariance => true
    case _: HyperLogLogPlusPlus | _: CollectList | _: CollectSet => true
    case p: Percentile => p.frequencyExpression match {
        case Literal(n: Long, _) => n >= 0
        case Literal(n: Int, _) => n >= 0
        case _ => false
      }
    case _ => false
  }

  private def mayFail(e: Expression): Boolean = e match {
    case _: Attribute | _: Literal | _: BoundReference | _: Alias => false
    case _: UnscaledValue | _: KnownNotNull | _: KnownFloatingPointNormalized |
        _: NormalizeNaNAndZero => false
    case _: If | _: CaseWhen | _: Coalesce | _: IsNull | _: IsNotNull | _: IsNaN | _: NaNvl |
        _: Not | _: And | _: Or | _: BinaryComparison | _: In | _: InSet |
        _: AtLeastNNonNulls => false
    case c: Cast => c.evalMode == EvalMode.ANSI && !safeCast(c.child.dataType, c.dataType)
    case b @ (_: Add | _: Subtract | _: Multiply) =>
      ansi(b.asInstanceOf[BinaryArithmetic]) && !neverOverflows(b.dataType)
    case b @ (_: Divide | _: Remainder | _: IntegralDivide | _: Pmod) =>
      val d = b.asInstanceOf[BinaryArithmetic]
      ansi(d) && !(neverOverflows(d.dataType) && nonZeroConstant(d.right))
    case u: UnaryMinus => u.failOnError && !neverOverflows(u.dataType)
    case a: Abs => a.failOnError && !neverOverflows(a.dataType)
    case _ => true
  }

  /** `b` fails on overflow or division by zero (ANSI mode, or a mode not known). */
  private def ansi(b: BinaryArithmetic): Boolean =
    !EvalModes.of(b).exists(m => m == EvalMode.LEGACY || m == EvalMode.TRY)

  /** Every value of `from` has a value of `to`. */
  private def safeCast(from: DataType, to: DataType): Boolean = Cast.canUpCast(from, to) ||
    (from.isInstanceOf[NumericType] && (to == DoubleType || to == FloatType)) ||
    (from.isInstanceOf[AtomicType] && to == StringType)

  /** A result of type `t` is never out of range: floating point, or a decimal of < 38 digits. */
  private def neverOverflows(t: DataType): Boolean = t match {
    case FloatType | DoubleType => true
    case d: DecimalType => d.precision < DecimalType.MAX_PRECISION
    case _ => false
  }

  private def nonZeroConstant(e: Expression): Boolean = e match {
    case Literal(v: Double, DoubleType) => v != 0
    case Literal(v: Float, FloatType) => v != 0
    case Literal(v: Decimal, _: DecimalType) => v.toBigDecimal != 0
    case Literal(v: Number, _: IntegralType) => v.longValue != 0
    case _ => false
  }

  private def interval(t: DataType): Boolean = t match {
    case _: YearMonthIntervalType | _: DayTimeIntervalType => true
    case _ => false
  }
}
