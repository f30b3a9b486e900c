package org.apache.spark.sql.skewagg.ansi

import org.apache.spark.sql.catalyst.expressions.{
  Add, BinaryArithmetic, Divide, EvalMode, IntegralDivide, Multiply, Pmod, Remainder, Subtract
}
import org.apache.spark.sql.catalyst.expressions.aggregate.Sum

/**
 * How Spark's `sum` and arithmetic handle overflow and division by zero, Spark 4.0: each
 * expression's own evalMode (BinaryArithmetic's is not public).
 */
object EvalModes {
  def of(sum: Sum): EvalMode.Value = sum.evalMode

  /** None for arithmetic other than + - * / % div pmod. */
  def of(b: BinaryArithmetic): Option[EvalMode.Value] = b match {
    case e: Add => Some(e.evalMode)
    case e: Subtract => Some(e.evalMode)
    case e: Multiply => Some(e.evalMode)
    case e: Divide => Some(e.evalMode)
    case e: Remainder => Some(e.evalMode)
    case e: IntegralDivide => Some(e.evalMode)
    case e: Pmod => Some(e.evalMode)
    case _ => None
  }
}
