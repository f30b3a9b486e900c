package org.apache.spark.sql.skewagg

import org.apache.spark.SparkConf
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.expressions.Window
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.explain.SkewAggExplain
import org.apache.spark.sql.skewagg.singlekey.HotKeySplitAggregateExec
import org.apache.spark.sql.skewagg.skewsplit.{
  SplitMergeOfPartialStates, SplitSkewedBucketsBelowAggregate, SplitSkewedJoinBelowAggregate,
  SplitSkewedShuffleBelowAggregate
}
import org.apache.spark.sql.skewagg.window.HotKeySplitWindowExec

import org.apache.spark.sql.skewagg.SkewTestData._

/**
 * Shuffles of more than 2000 partitions, where Spark averages the block sizes of each map task
 * unless `spark.shuffle.accurateBlockSkewedFactor` is set ([[AveragedBlockSizes]]): every rule
 * that reads map statistics splits with the setting, and without it leaves the plan alone and
 * says in the explanation that the sizes were averaged. The setting is an application one, read
 * where map tasks run: on `local[2]` that is this JVM's SparkConf, changed for each test.
 */
class ManyShufflePartitionsSuite extends SkewAggSuiteBase with SpreadOverBuilds {

  private val Partitions = 2001

  private val manyPartitions = conf ++ Seq(
    SQLConf.SHUFFLE_PARTITIONS.key -> Partitions.toString,
    // As in production: adaptive execution coalesces the small partitions (and runs fewer tasks).
    SQLConf.COALESCE_PARTITIONS_ENABLED.key -> "true")

  private def sparkConf: SparkConf = spark.sparkContext.conf

  /** `body` with the factor `skewagg.configure()` sets, or (None) without it. */
  private def withFactor[T](factor: Option[String])(body: => T): T =
    ConfScopes.withSparkConf(sparkConf, AveragedBlockSizes.FactorKey -> factor)(body)

  /** The executed plan of `query` with skewagg on, adaptive execution `adaptive`, once it ran. */
  private def skewaggRun(
      query: SparkSession => DataFrame,
      extra: Seq[(String, String)],
      adaptive: Boolean = true): SparkPlan =
    withSQLConf(manyPartitions ++ extra ++ Seq(
      SkewAggConf.ENABLED.key -> "true",
      SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> adaptive.toString): _*) {
      val df = query(spark)
      df.collect()
      executedPlan(df)
    }

  /** Whether the explanation of `plan` says `rewrite` rewrote it (its marker's record). */
  private def rewrittenBy(rewrite: String)(plan: SparkPlan): Boolean =
    SkewAggExplain.explain(plan).contains(s"rewritten: $rewrite")

  /** Whether a window of `plan` split a hot key. */
  private def windowSplit(plan: SparkPlan): Boolean =
    nodes[HotKeySplitWindowExec](plan).exists(_.metrics("hotKeys").value > 0)

  /**
   * With the factor: `split` holds, rows equal off/on (adaptive off and on). Without it: it does
   * not, and the explanation says the sizes were averaged. Returns the runs with the factor.
   */
  private def assertSeenOnlyWithFactor(
      query: SparkSession => DataFrame,
      split: SparkPlan => Boolean,
      extra: (String, String)*): Differential = {
    val withIt = withFactor(Some("5.0")) {
      val d = differential(query, manyPartitions ++ extra: _*)
      val plan = d.plan(on = true, adaptive = true)
      assert(split(plan), SkewAggExplain.explain(plan))
      d
    }
    withFactor(None) {
      val plan = skewaggRun(query, extra)
      val explained = SkewAggExplain.explain(plan)
      assert(!split(plan), explained)
      assert(explained.contains("skew unseen: in "), explained)
      assert(explained.contains(s"this shuffle has ${"%,d".format(Partitions)}"), explained)
      assert(explained.contains(s"Set ${AveragedBlockSizes.FactorKey}=5.0"), explained)
    }
    withIt
  }

  test("the join split sees the hot key only with accurate block sizes") {
    assertSeenOnlyWithFactor(
      s => fact(s, skewed = true).join(dim(s), "k").groupBy("k").agg(sum("v"), max("i")),
      rewrittenBy(SplitSkewedJoinBelowAggregate.Rewrite),
      SkewAggConf.JOIN_LOCAL_AGGREGATE_ENABLED.key -> "false")
  }

  test("the repartition split sees the hot key only with accurate block sizes") {
    assertSeenOnlyWithFactor(
      s => fact(s, skewed = true).repartition(col("k")).groupBy("k").agg(sum("v"), max("i")),
      rewrittenBy(SplitSkewedShuffleBelowAggregate.Rewrite),
      SkewAggConf.REPARTITION_LOCAL_AGGREGATE_ENABLED.key -> "false")
  }

  test("the window split sees the hot key only with accurate block sizes") {
    // (Read by 8 tasks: a hot partition written by 2 map tasks is routed in halves, which does
    // not pay.)
    val query = (s: SparkSession) =>
      fact(s, skewed = true).repartition(8).select(
        col("k"),
        col("v"),
        sum("i").over(Window.partitionBy("k").orderBy("v")))
    val extra = Seq(
      SkewAggConf.WINDOW_SPLIT_MIN_KEY_ROWS.key -> "100",
      SkewAggConf.WINDOW_SPLIT_SAMPLE_SIZE.key -> "2000")
    val withFactorRuns = assertSeenOnlyWithFactor(query, windowSplit, extra: _*)
    // Without adaptive execution the window decides when its shuffle has run: split with the
    // factor (the differential's run), and without it its run says the sizes were averaged.
    def onlyWindow(plan: SparkPlan): HotKeySplitWindowExec = {
      val found = nodes[HotKeySplitWindowExec](plan)
      assert(found.size == 1, plan)
      found.head
    }
    val split = onlyWindow(withFactorRuns.plan(on = true, adaptive = false))
    assert(split.metrics("hotKeys").value == 1, split.decision)
    withFactor(None) {
      val run = onlyWindow(skewaggRun(query, extra, adaptive = false))
      assert(run.metrics("hotKeys").value == 0)
      assert(run.decision.contains("skew unseen: Spark recorded"), run.decision)
    }
  }

  test("a window on 5 keys: each split by the per-slot share, block sizes averaged or not") {
    // The 5 keys' blocks of a map task are alike: their average is their size, and each key is
    // a fifth of the stage, far above an even share on 64 slots.
    val query = (s: SparkSession) => {
      val w = Window.partitionBy(col("id") % 5).orderBy("id")
      s.range(0, 20000, 1, 8).select(
        col("id"),
        row_number().over(w).as("rn"),
        sum("id").over(w).as("run"),
        lag("id", 1).over(w).as("l"))
    }
    val extra = Seq(
      SkewAggConf.WINDOW_SPLIT_MIN_KEY_ROWS.key -> "100",
      SkewAggConf.WINDOW_SPLIT_SAMPLE_SIZE.key -> "2000")
    withFactor(None) {
      val d = differential(query, manyPartitions ++ extra: _*)
      for (adaptive <- Seq(true, false)) {
        val split = nodes[HotKeySplitWindowExec](d.plan(on = true, adaptive))
        assert(split.size == 1, d.plan(on = true, adaptive))
        assert(split.head.decision.contains("5 hot keys split by order"), split.head.decision)
      }
    }
  }

  test("4 keys' heavy partial states: merged in two levels, block sizes averaged or not") {
    // A map task's blocks are its 4 keys' sketches, alike: their average is their size.
    val query = (s: SparkSession) =>
      s.range(0, 40000, 1, 40).groupBy((col("id") % 4).as("k"))
        .agg(expr("percentile_approx(id, array(0.1, 0.5), 100000)").as("p"))
    withFactor(None) {
      val d = differential(query, manyPartitions: _*)
      assert(rewrittenBy(SplitMergeOfPartialStates.Rewrite)(d.plan(on = true, adaptive = true)))
    }
  }

  test("the percentile split samples its input: it sees the hot key without the setting") {
    withFactor(None) {
      val d = differential(
        s => {
          holisticTable(s, when(col("id") % 10 < 4, lit(0L)).otherwise(col("id") % 101), 4000)
            .createOrReplaceTempView("t")
          s.sql("SELECT k, percentile(v, 0.5), sum(v) FROM t GROUP BY k")
        },
        SQLConf.SHUFFLE_PARTITIONS.key -> Partitions.toString,
        SkewAggConf.SINGLE_KEY_SPLIT_MIN_KEY_ROWS.key -> "100",
        SkewAggConf.SKEW_TASK_SLOTS.key -> "64")
      for (adaptive <- Seq(false, true)) {
        val split = nodes[HotKeySplitAggregateExec](d.plan(on = true, adaptive))
        assert(split.map(_.metrics("hotKeys").value) == Seq(1L), d.plan(on = true, adaptive))
      }
    }
  }

  test("the bucket split reads file sizes: it sees the hot bucket without the setting") {
    spark.sql("DROP TABLE IF EXISTS many_partitions_bucketed")
    fact(spark, skewed = true).write.bucketBy(16, "k").format("parquet")
      .saveAsTable("many_partitions_bucketed")
    try withFactor(None) {
        val d = differential(
          _.table("many_partitions_bucketed").groupBy("k").agg(sum("v"), max("i")),
          manyPartitions ++ Seq(
            SQLConf.BUCKETING_ENABLED.key -> "true",
            // In bytes the hot bucket is about 4x the median (its constant key compresses well).
            SkewAggConf.SKEW_FACTOR.key -> "3"): _*)
        for (adaptive <- Seq(false, true)) {
          val plan = d.plan(on = true, adaptive)
          assert(rewrittenBy(SplitSkewedBucketsBelowAggregate.Rewrite)(plan), plan)
        }
      }
    finally spark.sql("DROP TABLE IF EXISTS many_partitions_bucketed")
  }

  test(
    "the warning at session start names the setting where shuffles can be averaged",
    EveryBuild) {
    val conf = new SparkConf(loadDefaults = false)
    assert(AveragedBlockSizes.sessionStartWarning(conf).isEmpty)
    conf.set(SQLConf.SHUFFLE_PARTITIONS.key, "2000")
    assert(AveragedBlockSizes.sessionStartWarning(conf).isEmpty)
    conf.set(SQLConf.COALESCE_PARTITIONS_INITIAL_PARTITION_NUM.key, "4000")
    val warning = AveragedBlockSizes.sessionStartWarning(conf)
    assert(
      warning.exists(_.contains(
        s"${SQLConf.COALESCE_PARTITIONS_INITIAL_PARTITION_NUM.key}=4000")),
      warning)
    assert(warning.exists(_.contains(s"Set ${AveragedBlockSizes.FactorKey}=5.0")), warning)
    conf.set(SkewAggConf.SKEW_FACTOR.key, "3")
    assert(AveragedBlockSizes.sessionStartWarning(conf).exists(
      _.contains(s"Set ${AveragedBlockSizes.FactorKey}=3.0")))
    conf.set(AveragedBlockSizes.FactorKey, "3")
    assert(AveragedBlockSizes.sessionStartWarning(conf).isEmpty)
  }
}
