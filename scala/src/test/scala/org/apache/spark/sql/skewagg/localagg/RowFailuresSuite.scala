package org.apache.spark.sql.skewagg.localagg

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.expressions.{
  Add, AttributeReference, Cast, Divide, EvalMode, Expression, Literal
}
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, Complete, Sum}
import org.apache.spark.sql.types.{DecimalType, DoubleType, IntegerType, LongType}

/** What may throw on some row ([[RowFailures]]), by mode, type and divisor. */
class RowFailuresSuite extends AnyFunSuite {
  private val l = AttributeReference("l", LongType)()
  private val x = AttributeReference("x", DoubleType)()
  private val d = AttributeReference("d", DecimalType(12, 2))()

  private def fails(input: Expression): Boolean =
    RowFailures.of(
      AggregateExpression(Sum(input), Complete, isDistinct = false),
      trustUserCode = false).isDefined

  test("columns, floating point and decimal arithmetic, and constant divisors other than 0") {
    assert(!fails(x) && !fails(l) && !fails(d))
    assert(!fails(Add(x, Literal(1.0), EvalMode.ANSI)))
    assert(!fails(Add(d, d, EvalMode.ANSI)))
    assert(!fails(Divide(x, Literal(100.0), EvalMode.ANSI)))
    assert(!fails(Divide(x, Literal(Double.NaN), EvalMode.ANSI)))
    assert(!fails(Cast(
      Cast(l, IntegerType, evalMode = EvalMode.LEGACY),
      LongType,
      evalMode = EvalMode.ANSI)))
  }

  test("ANSI: integer overflow, division by a column or by 0, narrowing casts") {
    assert(fails(Add(l, l, EvalMode.ANSI)))
    assert(!fails(Add(l, l, EvalMode.LEGACY)) && !fails(Add(l, l, EvalMode.TRY)))
    assert(fails(Divide(x, x, EvalMode.ANSI)))
    assert(fails(Divide(x, Literal(0.0), EvalMode.ANSI)))
    assert(!fails(Divide(x, x, EvalMode.LEGACY)))
    assert(fails(Cast(l, IntegerType, evalMode = EvalMode.ANSI)))
    assert(!fails(Cast(l, IntegerType, evalMode = EvalMode.TRY)))
  }
}
