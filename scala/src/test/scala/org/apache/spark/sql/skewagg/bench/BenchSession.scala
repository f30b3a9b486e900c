package org.apache.spark.sql.skewagg.bench

import org.apache.spark.sql.SparkSession

/**
 * The session the Scala benchmark mains run in: local[2] with skewagg registered, no UI, files
 * read in 2MB splits as `benchmarks/bench.py` reads them, plus `settings`.
 */
private[bench] object BenchSession {
  def apply(settings: (String, String)*): SparkSession = {
    val builder = SparkSession.builder().master("local[2]")
      .config("spark.sql.extensions", "io.skewagg.SkewAggExtensions")
      .config("spark.ui.enabled", "false")
      .config("spark.sql.files.maxPartitionBytes", "2MB")
    val spark = settings.foldLeft(builder) { case (b, (k, v)) => b.config(k, v) }.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark
  }
}
