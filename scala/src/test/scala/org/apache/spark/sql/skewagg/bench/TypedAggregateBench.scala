package org.apache.spark.sql.skewagg.bench

import org.apache.spark.sql.functions._
import org.apache.spark.sql.skewagg.SkewAggConf
import org.apache.spark.sql.skewagg.localagg.SumOfSquares

/**
 * A typed Aggregator (`udaf(SumOfSquares)`, grouped by `k`) with skewagg off and with
 * spark.skewagg.singleKey.typedAggregate.enabled, alternating, 3 runs each, on Parquet tables
 * with columns (k, v), e.g. the ones `benchmarks/bench.py` writes:
 *
 *   build/sbt "spark43/Test/runMain org.apache.spark.sql.skewagg.bench.TypedAggregateBench \
 *     benchmarks/work/rows=10000000-v3/holistic/fact_highcard"
 *
 * Python cannot register a Scala Aggregator, so this one lives with the Scala tests. It prints
 * one line per run and whether both variants' results agree.
 */
object TypedAggregateBench {
  def main(args: Array[String]): Unit = {
    val spark = BenchSession(
      "spark.sql.shuffle.partitions" -> "200",
      "spark.sql.adaptive.coalescePartitions.enabled" -> "false",
      SkewAggConf.SINGLE_KEY_TYPED_AGGREGATE_ENABLED.key -> "true")
    val sumOfSquares = udaf(SumOfSquares)
    for (path <- args) {
      val results = for {
        repeat <- 0 until 3
        on <- if (repeat % 2 == 0) Seq(false, true) else Seq(true, false)
      } yield {
        spark.conf.set(SkewAggConf.ENABLED.key, on.toString)
        val query = spark.read.parquet(path).groupBy("k").agg(sumOfSquares(col("v")).as("s"))
        System.gc()
        val start = System.nanoTime()
        val totals = query.agg(count(lit(1)), sum("s")).collect()(0)
        val wall = (System.nanoTime() - start) / 1e9
        val singleKey = query.queryExecution.executedPlan.toString.contains("SingleKeyAggregate")
        println(f"$path skewagg=$on%-5s wall=$wall%.2f s SingleKeyAggregate=$singleKey " +
          s"keys=${totals.getLong(0)}")
        (on, wall, totals.getLong(0), totals.getDouble(1))
      }
      val (off, on) = results.partition(!_._1)
      def median(runs: Seq[(Boolean, Double, Long, Double)]) = runs.map(_._2).sorted.apply(1)
      val agree = off.head._3 == on.head._3 &&
        math.abs(off.head._4 - on.head._4) <= 1e-9 * math.abs(off.head._4)
      println(f"$path median wall: off ${median(off)}%.2f s, on ${median(on)}%.2f s, " +
        f"on/off ${median(on) / median(off)}%.2f; results agree: $agree")
    }
    spark.stop()
  }
}
