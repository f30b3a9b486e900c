package org.apache.spark.sql.skewagg.window

import org.apache.spark.sql.catalyst.expressions.{DateAdd, Expression, ExtractANSIIntervalDays}

/** A date plus a day interval (`INTERVAL '7' DAY`), as Spark's RANGE frame adds them. */
private[window] object DateDayIntervalAddition {
  def apply(date: Expression, days: Expression): Option[Expression] =
    Some(DateAdd(date, ExtractANSIIntervalDays(days)))
}
