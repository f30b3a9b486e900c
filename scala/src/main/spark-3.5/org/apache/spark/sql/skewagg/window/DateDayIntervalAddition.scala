package org.apache.spark.sql.skewagg.window

import org.apache.spark.sql.catalyst.expressions.Expression

/**
 * A date plus a day interval (`INTERVAL '7' DAY`), as Spark's RANGE frame adds them: Spark 3.5's
 * analyzer refuses that frame (RANGE_FRAME_INVALID_TYPE), so none.
 */
private[window] object DateDayIntervalAddition {
  def apply(date: Expression, days: Expression): Option[Expression] = None
}
