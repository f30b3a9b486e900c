package org.apache.spark.sql.skewagg.window

import org.apache.spark.sql.catalyst.expressions.{
  Add, Ascending, DateAdd, DateAddYMInterval, DecimalAddNoOverflowCheck, Descending, Expression,
  SortOrder, TimestampAddYMInterval, UnaryMinus
}
import org.apache.spark.sql.types.{
  CalendarIntervalType, DateType, DayTimeIntervalType, DecimalType, IntegerType, TimestampNTZType,
  TimestampType, YearMonthIntervalType
}
import org.apache.spark.sql.types.DayTimeIntervalType.DAY

/**
 * The bound of a RANGE frame `offset` away from the current row's value of `order` (its one
 * ORDER BY expression), as Spark's window computes it (`createBoundOrdering`): the value plus the
 * offset (minus it for a descending order), added as the types ask (days to a date, an interval
 * to a timestamp in the session's `timeZone`, decimals without an overflow check). None where
 * Spark's window of the running line has no such addition.
 */
private[window] object RangeFrameBound {
  def apply(order: SortOrder, offset: Expression, timeZone: String): Option[Expression] = {
    val value = order.child
    val signed = order.direction match {
      case Descending => UnaryMinus(offset)
      case Ascending => offset
    }
    (value.dataType, signed.dataType) match {
      case (DateType, IntegerType) => Some(DateAdd(value, signed))
      case (DateType, _: YearMonthIntervalType) => Some(DateAddYMInterval(value, signed))
      case (DateType, DayTimeIntervalType(DAY, DAY)) => DateDayIntervalAddition(value, signed)
      case (TimestampType | TimestampNTZType, CalendarIntervalType) =>
        Some(TimestampIntervalAddition(value, signed, timeZone))
      case (TimestampType | TimestampNTZType, _: YearMonthIntervalType) =>
        Some(TimestampAddYMInterval(value, signed, Some(timeZone)))
      case (TimestampType | TimestampNTZType, _: DayTimeIntervalType) =>
        Some(TimestampIntervalAddition(value, signed, timeZone))
      case (d: DecimalType, _: DecimalType) => Some(DecimalAddNoOverflowCheck(value, signed, d))
      case (a, b) if a == b => Some(Add(value, signed))
      case _ => None
    }
  }
}
