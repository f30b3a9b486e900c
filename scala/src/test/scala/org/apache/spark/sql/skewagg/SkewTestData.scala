package org.apache.spark.sql.skewagg

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf

/** Small skewed and uniform tables, and settings under which their skew is detected. */
object SkewTestData {
  val Keys = 1000

  /** `(k, v, i, d)`: with `skewed`, 30% of rows on key 0, the rest uniform over the keys. */
  def fact(s: SparkSession, skewed: Boolean, rows: Int = 20000): DataFrame = {
    val uniformKey = (col("id") * 7919) % Keys
    val k = if (skewed) when(col("id") % 10 < 3, lit(0L)).otherwise(uniformKey) else uniformKey
    s.range(0, rows).select(
      k.as("k"),
      when(col("id") === 11, lit(Double.NaN)).otherwise(col("id") / 7.0).as("v"),
      (col("id") % 7).cast("int").as("i"),
      (col("id") % 100).cast("decimal(12,2)").as("d"))
  }

  /** `(k, attr)`: one row per key; `attr` groups keys in tens. */
  def dim(s: SparkSession): DataFrame =
    s.range(0, Keys).select(col("id").as("k"), (col("id") % 10).as("attr"))

  /** Shuffles and skew thresholds sized for these tables; broadcast joins off. */
  val conf: Seq[(String, String)] = Seq(
    SQLConf.SHUFFLE_PARTITIONS.key -> "32",
    SQLConf.AUTO_BROADCASTJOIN_THRESHOLD.key -> "-1",
    SkewAggConf.SKEW_MIN_SPLIT_SIZE.key -> "2k",
    SQLConf.COALESCE_PARTITIONS_ENABLED.key -> "false",
    SkewAggConf.SKEW_MIN_PARTITION_SIZE.key -> "4k")
}
