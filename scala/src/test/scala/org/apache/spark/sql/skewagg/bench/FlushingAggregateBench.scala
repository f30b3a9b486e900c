package org.apache.spark.sql.skewagg.bench

import org.apache.spark.sql.execution.{RDDScanExec, SparkPlan}
import org.apache.spark.sql.functions._
import org.apache.spark.sql.skewagg.localagg.FlushingPartialAggregateExec

/**
 * What the flushing local aggregate costs per row, without the scan and shuffle around it: the
 * join scenario's `FlushingPartialAggregateExec` (from `fact.join(dim, "k").groupBy("k")
 * .agg(sum("v"))`) run over the fact rows cached in memory, against iterating the cached rows
 * alone, alternating, 7 runs each, on the tables `benchmarks/bench.py` writes:
 *
 *   build/sbt 'set spark43/Test/javaOptions += "-Xmx8g"' "spark43/Test/runMain \
 *     org.apache.spark.sql.skewagg.bench.FlushingAggregateBench \
 *     benchmarks/work/rows=20000000-v3 skewed uniform"
 *
 * It prints the median milliseconds of each and the difference in CPU nanoseconds per row
 * (local[2]: both cores busy, so twice the wall-time difference).
 */
object FlushingAggregateBench {
  def main(args: Array[String]): Unit = {
    val spark = BenchSession(
      "spark.sql.adaptive.enabled" -> "false",
      "spark.sql.autoBroadcastJoinThreshold" -> "-1")
    val base = args(0)
    val dim = spark.read.parquet(s"$base/dim")
    for (data <- args.drop(1)) {
      val fact = spark.read.parquet(s"$base/fact_$data")
      val plan = fact.join(dim, "k").groupBy("k").agg(sum("v")).queryExecution.executedPlan
      val flushing = plan.collectFirst { case f: FlushingPartialAggregateExec => f }.getOrElse(
        sys.error(s"no FlushingPartialAggregate in the plan:\n$plan"))
      val cached = flushing.child.execute().map(_.copy()).cache()
      val rows = cached.count()
      val scan = RDDScanExec(flushing.child.output, cached, "cached fact rows")
      val aggregate = flushing.withNewChildren(Seq(scan))
      def millis(p: SparkPlan): Double = {
        System.gc()
        val start = System.nanoTime()
        p.execute().foreach(_ => ())
        (System.nanoTime() - start) / 1e6
      }
      val runs = Seq.fill(7)((millis(scan), millis(aggregate)))
      def median(xs: Seq[Double]): Double = xs.sorted.apply(xs.size / 2)
      val (scanMs, aggregateMs) = (median(runs.map(_._1)), median(runs.map(_._2)))
      println(f"$data: $rows%,d rows in ${cached.getNumPartitions} partitions; cached rows " +
        f"$scanMs%.0f ms, flushing aggregate over them $aggregateMs%.0f ms: " +
        f"${(aggregateMs - scanMs) * 1e6 * 2 / rows}%.1f ns of CPU per row " +
        s"(runs: ${runs.map { case (s, a) => s"${s.round}/${a.round}" }.mkString(", ")})")
      cached.unpersist()
    }
    spark.stop()
  }
}
