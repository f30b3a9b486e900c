package org.apache.spark.sql.skewagg.singlekey

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.errors.QueryExecutionErrors

/** Spark's own errors of aggregate functions, as the running line words them. */
object AggregateErrors {

  /** A negative frequency of `percentile(col, p, frequency)`. */
  def negativeFrequency(frequency: Expression, value: Long): Throwable =
    QueryExecutionErrors.negativeValueUnexpectedError(frequency, value)
}
