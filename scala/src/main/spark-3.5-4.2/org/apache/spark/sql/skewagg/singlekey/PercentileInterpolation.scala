package org.apache.spark.sql.skewagg.singlekey

/** Spark's linear interpolation of a percentile between two ranks, Spark 4.0 to 4.2. */
object PercentileInterpolation {

  /** The value at `position`, between `lowerValue` at rank `lower` and the next rank's value. */
  def between(
      position: Double,
      lower: Long,
      lowerValue: Double,
      higher: Long,
      higherValue: Double): Double =
    (higher - position) * lowerValue + (position - lower) * higherValue
}
