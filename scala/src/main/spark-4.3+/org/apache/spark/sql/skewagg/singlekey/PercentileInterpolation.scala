package org.apache.spark.sql.skewagg.singlekey

/**
 * Spark's linear interpolation of a percentile between two ranks, Spark 4.3 and newer: from the
 * lower value by the difference (the last bits of a result can differ from 4.2's arithmetic).
 */
object PercentileInterpolation {

  /** The value at `position`, between `lowerValue` at rank `lower` and the next rank's value. */
  def between(
      position: Double,
      lower: Long,
      lowerValue: Double,
      higher: Long,
      higherValue: Double): Double =
    lowerValue + (position - lower) * (higherValue - lowerValue)
}
