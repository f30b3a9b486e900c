package org.apache.spark.sql.skewagg.ansi

import org.apache.spark.sql.catalyst.expressions.{BinaryArithmetic, EvalMode}
import org.apache.spark.sql.catalyst.expressions.aggregate.Sum

/**
 * How Spark's `sum` and arithmetic handle overflow and division by zero, Spark 4.1+: the
 * evalMode of their NumericEvalContext.
 */
object EvalModes {
  def of(sum: Sum): EvalMode.Value = sum.evalContext.evalMode

  def of(b: BinaryArithmetic): Option[EvalMode.Value] = Some(b.evalMode)
}
