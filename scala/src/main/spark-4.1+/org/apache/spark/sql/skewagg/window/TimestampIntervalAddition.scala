package org.apache.spark.sql.skewagg.window

import org.apache.spark.sql.catalyst.expressions.{Expression, TimestampAddInterval}

/** A timestamp plus a calendar or day-time interval, as Spark's RANGE frame adds them. */
private[window] object TimestampIntervalAddition {
  def apply(timestamp: Expression, interval: Expression, timeZone: String): Expression =
    TimestampAddInterval(timestamp, interval, Some(timeZone))
}
