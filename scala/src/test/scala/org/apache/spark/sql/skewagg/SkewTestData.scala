package org.apache.spark.sql.skewagg

import org.apache.spark.sql.{Column, DataFrame, SparkSession}
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

  /**
   * `(k, x, v)`, 200,000 rows in one partition: 30% on k = 0, spread over 300 values of x (each
   * too rare to be a heavy key alone), the others on unique keys 1 to 200,000.
   */
  def hotKeySpreadOverX(s: SparkSession): DataFrame = s.range(0, 200000, 1, 1).select(
    when(col("id") % 10 < 3, lit(0L)).otherwise(col("id") + 1).as("k"),
    (col("id") % 1000).as("x"),
    (col("id") / 7.0).as("v"))

  /**
   * For holistic aggregates, `(k, v, i, d, f, m, s)`: v a double with duplicates, NaN, -0.0 and
   * 0.0 and nulls; i an int; d a decimal; f a frequency (0 to 3, some null); m an int with one
   * clearly most frequent value per key (7, about 2/3 of the rows); s a string.
   */
  def holisticTable(s: SparkSession, keyOf: Column, rows: Int): DataFrame =
    s.range(0, rows).select(
      keyOf.as("k"),
      when(col("id") % 97 === 5, lit(null).cast("double"))
        .when(col("id") % 89 === 3, lit(Double.NaN))
        .when(col("id") % 13 === 1, lit(-0.0))
        .when(col("id") % 13 === 2, lit(0.0))
        .otherwise(floor(col("id") / 3) % 50 - 10.5).as("v"),
      (col("id") % 7).cast("int").as("i"),
      (col("id") % 100 / 8).cast("decimal(12,3)").as("d"),
      when(col("id") % 11 === 0, lit(null)).otherwise(col("id") % 4).as("f"),
      when(col("id") % 3 =!= 0, lit(7)).otherwise(col("id") % 11).cast("int").as("m"),
      (col("id") % 5).cast("string").as("s"))

  /** Every exact percentile form over `holisticTable`'s `v` (frequency `f`, arrays, DESC). */
  val percentilesOfV: Seq[String] = Seq(
    "percentile(v, 0.5)",
    "percentile(v, 0.0)",
    "percentile(v, 1.0)",
    "percentile(v, 0.37)",
    "percentile(v, array(0.1, 0.5, 0.9))",
    "percentile(v, array(0.0, 1.0))",
    "percentile(v, 0.3, f)",
    "percentile(v, array(0.25, 0.75), f)",
    "median(v)",
    "median(v) + 1 AS plus_one",
    "percentile_cont(0.25) WITHIN GROUP (ORDER BY v)",
    "percentile_cont(0.6) WITHIN GROUP (ORDER BY v DESC)",
    "percentile_disc(0.25) WITHIN GROUP (ORDER BY v)",
    "percentile_disc(0.0) WITHIN GROUP (ORDER BY v)",
    "percentile_disc(0.6) WITHIN GROUP (ORDER BY v DESC)")

  /** `(k, attr)`: one row per key; `attr` groups keys in tens. */
  def dim(s: SparkSession): DataFrame =
    s.range(0, Keys).select(col("id").as("k"), (col("id") % 10).as("attr"))

  /** Shuffles and skew thresholds sized for these tables; broadcast joins off. */
  val conf: Seq[(String, String)] = Seq(
    SQLConf.SHUFFLE_PARTITIONS.key -> "32",
    SQLConf.AUTO_BROADCASTJOIN_THRESHOLD.key -> "-1",
    SkewAggConf.SKEW_MIN_SPLIT_SIZE.key -> "2k",
    SQLConf.COALESCE_PARTITIONS_ENABLED.key -> "false",
    SkewAggConf.SKEW_MIN_PARTITION_SIZE.key -> "4k",
    // Planned for a 64-slot cluster: on local[2]'s two slots no hot partition outlasts an even
    // share of a stage, so nothing would be split (TaskSlots).
    SkewAggConf.SKEW_TASK_SLOTS.key -> "64")
}
