package org.apache.spark.sql.skewagg.skewsplit

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.expressions.aggregate.PartialMerge
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.execution.exchange.ShuffleExchangeLike
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  CheapExchanges, Differential, EveryBuild, SkewAggConf, SkewAggLocalStageExec, SkewAggSuiteBase,
  SpreadOverBuilds
}
import org.apache.spark.sql.skewagg.SkewTestData.conf
import org.apache.spark.sql.skewagg.explain.SkewAggExplain

/**
 * The merge in two levels of heavy partial states (sketches, collected lists) of a few keys in
 * Spark's own two-phase aggregate (adaptive execution; planned for 64 task slots).
 */
class SplitMergeOfPartialStatesSuite extends SkewAggSuiteBase with SpreadOverBuilds {

  /** `rows` rows read by 40 map tasks, `keys` keys: each task writes a state per key. */
  private def events(s: SparkSession, keys: Int, rows: Int = 40000): DataFrame =
    s.range(0, rows, 1, 40).select(
      (col("id") % keys).as("k"),
      ((col("id") * 7919) % 3001).as("x"),
      (col("id") % 97).cast("double").as("d"))

  private def run(query: SparkSession => DataFrame, extra: (String, String)*): Differential =
    differential(query, conf ++ extra: _*)

  private def markers(d: Differential): Seq[SkewAggLocalStageExec] =
    nodes[SkewAggLocalStageExec](d.plan(on = true, adaptive = true))
      .filter(_.rewrite.what.startsWith(SplitMergeOfPartialStates.Rewrite))

  /** The merges of pieces' states (PartialMerge aggregates) in skewagg's adaptive plan. */
  private def pieceMerges(d: Differential): Seq[BaseAggregateExec] =
    nodes[BaseAggregateExec](d.plan(on = true, adaptive = true))
      .filter(_.aggregateExpressions.exists(_.mode == PartialMerge))

  private def assertMergedInTwoLevels(d: Differential): Unit = {
    val plan = d.plan(on = true, adaptive = true)
    assert(markers(d).size == 1, plan)
    assert(pieceMerges(d).nonEmpty, plan)
    // The pieces' merged states exchanged on the grouping keys.
    assert(nodes[ShuffleExchangeLike](plan).count(CheapExchanges.isAboveLocalStage) == 1, plan)
    // Without adaptive execution the sizes are unknown: Spark's plan.
    assert(nodes[SkewAggLocalStageExec](d.plan(on = true, adaptive = false)).isEmpty)
  }

  // Accuracy 100000: every sketch of these few thousand values per key keeps each value, so any
  // order of merging them gives Spark's percentiles exactly.
  private def sketches(keys: Int, rows: Int): SparkSession => DataFrame = s =>
    events(s, keys, rows).groupBy("k").agg(
      expr("percentile_approx(x, array(0.01, 0.25, 0.5, 0.99), 100000)").as("p"),
      expr("percentile_approx(d, 0.5, 100000)").as("m"),
      count(lit(1)).as("n"))

  test("four keys' percentile sketches: merged in pieces, then once per key", EveryBuild) {
    val d = run(sketches(keys = 4, rows = 40000))
    assertMergedInTwoLevels(d)
    val text = SkewAggExplain.explain(d.plan(on = true, adaptive = true))
    assert(
      text.matches("(?s).*heavy partial states merged in two levels: the final merge reads one " +
        "partial state per map task and key, partition \\d+ holds .* of the states of 40 map " +
        "tasks \\(.* a state\\), \\d+x the per-slot share .* on 64 task slots " +
        "\\(and \\d+ more\\); the skewed partitions read in \\d+ pieces of about .*"),
      text)
  }

  test("one key's sketches: merged in pieces") {
    assertMergedInTwoLevels(run(sketches(keys = 1, rows = 40000)))
  }

  test("60 keys on 64 slots: no partition above the per-slot share, Spark's plan") {
    val d = run(sketches(keys = 60, rows = 240000))
    assert(markers(d).isEmpty, d.plan(on = true, adaptive = true))
    assert(shape(d.plan(on = true, adaptive = true)) == shape(d.plan(on = false, adaptive = true)))
  }

  test("skewed partitions smaller than two pieces: read whole, the reason recorded") {
    // minSplitSize 1m (the default): each of the 4 partitions of about 200 KiB is one piece.
    val d = run(sketches(keys = 4, rows = 40000), SkewAggConf.SKEW_MIN_SPLIT_SIZE.key -> "1m")
    assert(markers(d).isEmpty, d.plan(on = true, adaptive = true))
    val text = SkewAggExplain.explain(d.plan(on = true, adaptive = true))
    assert(
      text.contains("but no skewed partition holds more than one piece of 1024.0 KiB (at least " +
        "spark.skewagg.skew.minSplitSize"),
      text)
  }

  test("Spark's default cost model, which would reject the added exchange: left alone, why") {
    val d = run(
      sketches(keys = 4, rows = 40000),
      SQLConf.ADAPTIVE_CUSTOM_COST_EVALUATOR_CLASS.key -> null)
    assert(markers(d).isEmpty, d.plan(on = true, adaptive = true))
    val text = SkewAggExplain.explain(d.plan(on = true, adaptive = true))
    assert(
      text.matches("(?s).*the final merge reads heavy partial states \\(partition \\d+ holds " +
        ".*\\), but Spark's default adaptive cost model rejects the exchange of partial results " +
        "skewagg needs. Set spark.sql.adaptive.customCostEvaluatorClass=.*"),
      text)
  }

  test("collected sets, high-precision approx_count_distinct: merged in two levels") {
    assertMergedInTwoLevels(run(s =>
      events(s, keys = 4).groupBy("k")
        .agg(sort_array(collect_set("x")), expr("approx_count_distinct(x, 0.01)"), sum("d"))))
  }

  test("collected lists: the final merge reads every value however merged, refused") {
    val d = run(s => events(s, keys = 4).groupBy("k").agg(sort_array(collect_list("x")), sum("d")))
    assert(markers(d).isEmpty, d.plan(on = true, adaptive = true))
    val text = SkewAggExplain.explain(d.plan(on = true, adaptive = true))
    assert(text.contains("but collect_list's merge keeps every value its states hold"), text)
  }

  test("HLL sketches: merged in two levels, each estimate within the sketch's accuracy") {
    // A union of HLL sketches depends on the order it merges them (as Spark's on the order its
    // shuffle delivers them): the estimates are compared with the exact count, 3001 a key.
    val query = (s: SparkSession) =>
      events(s, keys = 4).groupBy("k")
        .agg(expr("hll_sketch_estimate(hll_sketch_agg(x, 12))").as("e"))
    withSQLConf(conf ++ Seq(SkewAggConf.ENABLED.key -> "true", adaptiveOn): _*) {
      val df = query(spark)
      val estimates = df.collect().map(_.getLong(1))
      assert(markers(Differential(Nil, Map((true, true) -> executedPlan(df)))).size == 1)
      // lgK 12: a relative standard error of 1.6%; 5% is three of them.
      assert(estimates.length == 4 && estimates.forall(e => math.abs(e - 3001) <= 150), estimates)
    }
  }

  test("theta and KLL sketches, on the lines that have them: merged in two levels", EveryBuild) {
    assume(
      Seq("theta_sketch_agg", "kll_sketch_agg_bigint").forall(spark.catalog.functionExists),
      "Spark 4.1 added these sketches")
    // A theta sketch of fewer than 4096 distinct values is exact: any merge order gives Spark's
    // count.
    assertMergedInTwoLevels(run(s =>
      events(s, keys = 4).groupBy("k")
        .agg(expr("theta_sketch_estimate(theta_sketch_agg(x))").as("t"))))
    // A KLL sketch compacts at random, in Spark's plan too: its median (x is about uniform over
    // 0 until 3001 in every key) within the sketch's rank error, under 2% at its default k. Its
    // states of 250 values are compact (under 1 KiB): the threshold lowered for them.
    val kll = conf ++ Seq(
      SkewAggConf.ENABLED.key -> "true",
      adaptiveOn,
      SkewAggConf.PARTIAL_STATES_MIN_STATE_SIZE.key -> "256")
    withSQLConf(kll: _*) {
      val df = events(spark, keys = 4).groupBy("k")
        .agg(expr("kll_sketch_get_quantile_bigint(kll_sketch_agg_bigint(x), 0.5)").as("m"))
      val medians = df.collect().map(_.getLong(1))
      assert(
        markers(Differential(Nil, Map((true, true) -> executedPlan(df)))).size == 1,
        SkewAggExplain.explain(executedPlan(df)) + executedPlan(df))
      assert(medians.length == 4 && medians.forall(m => math.abs(m - 1500) <= 150), medians)
    }
  }

  test("a percentile sketch that drops values: within its accuracy of the exact percentile") {
    // Accuracy 100 over 100,000 values a key: the sketch keeps a few hundred, so the order of its
    // merges can change the answer, never by more than 1/accuracy of the key's rows in rank.
    val accuracy = 100
    val query = (s: SparkSession) =>
      s.range(0, 400000, 1, 40).select(
        (col("id") % 4).as("k"),
        ((col("id") * 7919) % 400000)
          .as("x")).groupBy("k").agg(
        expr(s"percentile_approx(x, array(0.1, 0.5, 0.9), $accuracy)").as("p"),
        count(lit(1)).as("n"))
    withSQLConf(conf ++ Seq(SkewAggConf.ENABLED.key -> "true", adaptiveOn): _*) {
      val df = query(spark)
      val rows = df.collect()
      assert(markers(Differential(Nil, Map((true, true) -> executedPlan(df)))).size == 1)
      for (row <- rows) {
        val key = row.getLong(0)
        val n = row.getLong(2)
        val values = row.getSeq[Long](1)
        for ((q, value) <- Seq(0.1, 0.5, 0.9).zip(values)) {
          // x runs over 0 until 400,000 once (7919 is prime to it); key k holds those equal to
          // 3k modulo 4, so the rank of a value in its key is counted from it.
          val rank = (value - (3 * key) % 4) / 4 + 1
          assert(math.abs(rank - q * n) <= n / accuracy.toDouble + 1, (key, q, value, rank, n))
        }
      }
    }
  }

  test("sums of the same keys: states of a few bytes, Spark's plan") {
    val d = run(s => events(s, keys = 4).groupBy("k").agg(sum("x"), count(lit(1))))
    assert(markers(d).isEmpty)
    assert(shape(d.plan(on = true, adaptive = true)) == shape(d.plan(on = false, adaptive = true)))
  }

  test("switched off: Spark's plan, and the explanation names the setting") {
    val d = run(
      sketches(keys = 4, rows = 40000),
      SkewAggConf.PARTIAL_STATES_SPLIT_ENABLED.key -> "false")
    assert(markers(d).isEmpty)
    val text = SkewAggExplain.explain(d.plan(on = true, adaptive = true))
    assert(text.contains(SkewAggConf.PARTIAL_STATES_SPLIT_ENABLED.key + "=false"), text)
  }

  test("one map task wrote each key's states: two levels would not pay, refused") {
    // 20 map tasks, the first 4 each holding one key's rows, the others none.
    val d = run(s =>
      s.range(0, 80000, 1, 20).where(col("id") < 16000)
        .select((col("id") / 4000).cast("long").as("k"), (col("id") % 3001).as("x"))
        .groupBy("k").agg(expr("percentile_approx(x, 0.5, 100000)")))
    assert(markers(d).isEmpty)
    val text = SkewAggExplain.explain(d.plan(on = true, adaptive = true))
    assert(text.contains("at most 2 map tasks wrote to a skewed partition"), text)
  }

  test("fewer than 16 map tasks: two levels would not pay, refused") {
    val d = run(s =>
      s.range(0, 40000, 1, 8).groupBy((col("id") % 4).as("k"))
        .agg(expr("percentile_approx(id, 0.5, 100000)")))
    assert(markers(d).isEmpty)
    val text = SkewAggExplain.explain(d.plan(on = true, adaptive = true))
    assert(
      text.contains("at most 8 map tasks wrote to a skewed partition: a merge in two " +
        "levels pays from 16."),
      text)
  }

  test("joined on its keys in the same stage: the output partitioning kept, refused") {
    // The sort-merge join reads the aggregate's output as Spark's exchange partitioned it.
    val d = run(s =>
      sketches(keys = 4, rows = 40000)(s).join(s.range(0, 4).withColumnRenamed("id", "k"), "k"))
    assert(markers(d).isEmpty, d.plan(on = true, adaptive = true))
    val text = SkewAggExplain.explain(d.plan(on = true, adaptive = true))
    assert(text.contains("needs its output partitioned as Spark's exchange"), text)
  }

  private val adaptiveOn = "spark.sql.adaptive.enabled" -> "true"
}
