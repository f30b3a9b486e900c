package org.apache.spark.sql.skewagg

import org.scalatest.BeforeAndAfterAll

import org.apache.spark.sql.execution.FileSourceScanExec
import org.apache.spark.sql.execution.exchange.ShuffleExchangeLike
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf

import SkewTestData._

class SplitSkewedBucketsBelowAggregateSuite extends SkewAggSuiteBase with BeforeAndAfterAll {

  override def beforeAll(): Unit = {
    super.beforeAll()
    for (skewed <- Seq(true, false)) {
      val name = if (skewed) "bucketed_skewed" else "bucketed_uniform"
      spark.sql(s"DROP TABLE IF EXISTS $name")
      fact(spark, skewed).write.bucketBy(16, "k").format("parquet").saveAsTable(name)
    }
  }

  override def afterAll(): Unit = {
    Seq("bucketed_skewed", "bucketed_uniform").foreach(t => spark.sql(s"DROP TABLE IF EXISTS $t"))
    super.afterAll()
  }

  // In bytes the hot bucket is about 4x the median (its constant key compresses well).
  private val bucketConf =
    conf ++ Seq(SQLConf.BUCKETING_ENABLED.key -> "true", SkewAggConf.SKEW_FACTOR.key -> "3")

  private def bucketedScans(d: Differential, on: Boolean, adaptive: Boolean): Int =
    nodes[FileSourceScanExec](d.plan(on, adaptive)).count(_.bucketedScan)

  private def cheapExchanges(d: Differential, on: Boolean, adaptive: Boolean): Int =
    nodes[ShuffleExchangeLike](d.plan(on, adaptive)).count(PartialAggregates.isCheapExchange)

  test("skewed buckets: the scan is read unbucketed and partials are exchanged") {
    val d = differential(s => s.table("bucketed_skewed").groupBy("k")
      .agg(sum("v"), count(lit(1)), avg("d"), countDistinct("i")), bucketConf: _*)
    for (adaptive <- Seq(false, true)) {
      assert(bucketedScans(d, on = false, adaptive) == 1)
      assert(bucketedScans(d, on = true, adaptive) == 0, d.plan(on = true, adaptive))
      assert(cheapExchanges(d, on = true, adaptive) > cheapExchanges(d, on = false, adaptive))
    }
  }

  test("grouping by the bucket key and another column, with a filter") {
    val d = differential(s => s.table("bucketed_skewed").where(col("i") =!= 2)
      .groupBy("k", "i").agg(sum("v")), bucketConf: _*)
    for (adaptive <- Seq(false, true)) {
      assert(bucketedScans(d, on = true, adaptive) == 0, d.plan(on = true, adaptive))
    }
  }

  test("uniform buckets: the bucketed plan is kept") {
    val d = differential(
      s => s.table("bucketed_uniform").groupBy("k").agg(sum("v")), bucketConf: _*)
    for (adaptive <- Seq(false, true)) {
      assert(bucketedScans(d, on = true, adaptive) == 1)
      assert(shape(d.plan(on = true, adaptive)) == shape(d.plan(on = false, adaptive)))
    }
  }

  test("left alone when spark.skewagg.bucketed.enabled is false") {
    val d = differential(s => s.table("bucketed_skewed").groupBy("k").agg(sum("v")),
      bucketConf :+ (SkewAggConf.BUCKETED_ENABLED.key -> "false"): _*)
    for (adaptive <- Seq(false, true)) assert(bucketedScans(d, on = true, adaptive) == 1)
  }
}
