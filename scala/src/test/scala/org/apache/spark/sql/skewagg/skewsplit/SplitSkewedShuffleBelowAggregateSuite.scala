package org.apache.spark.sql.skewagg.skewsplit

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.execution.PartialReducerPartitionSpec
import org.apache.spark.sql.execution.adaptive.AQEShuffleReadExec
import org.apache.spark.sql.execution.exchange.{
  REPARTITION_BY_COL, REPARTITION_BY_NUM, ShuffleExchangeLike
}
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  CheapExchanges, Differential, EveryBuild, SkewAggConf, SkewAggLocalStageExec, SkewAggSuiteBase,
  SkewedPartitions, SpreadOverBuilds
}

import org.apache.spark.sql.skewagg.SkewTestData._
import org.apache.spark.sql.skewagg.explain.SkewAggExplain

/** The runtime split of a skewed user repartition below an aggregate (adaptive execution). */
class SplitSkewedShuffleBelowAggregateSuite extends SkewAggSuiteBase with SpreadOverBuilds {

  /** The flushing partial aggregate before the user's shuffle would remove the skew first. */
  private def run(query: SparkSession => DataFrame, extra: (String, String)*): Differential =
    differential(
      query,
      conf ++ Seq(SkewAggConf.REPARTITION_LOCAL_AGGREGATE_ENABLED.key -> "false") ++ extra: _*)

  test("by default: split where the flushing aggregate does not apply (holistic functions)") {
    val d = differential(
      s =>
        fact(s, skewed = true).repartition(col("k")).groupBy("k")
          .agg(sum("v"), sort_array(collect_list("i"))),
      conf: _*)
    assert(splitMarkers(d, adaptive = true).size == 1, d.plan(on = true, adaptive = true))
  }

  private def splitMarkers(d: Differential, adaptive: Boolean): Seq[SkewAggLocalStageExec] =
    nodes[SkewAggLocalStageExec](d.plan(on = true, adaptive))
      .filter(_.rewrite.what.startsWith("skewed repartition read in splits"))

  /** A user-origin exchange whose input is a partial aggregate: the re-exchange of partials. */
  private def userExchangesOfPartials(
      d: Differential,
      adaptive: Boolean): Seq[ShuffleExchangeLike] =
    nodes[ShuffleExchangeLike](d.plan(on = true, adaptive)).filter { e =>
      (e.shuffleOrigin == REPARTITION_BY_COL || e.shuffleOrigin == REPARTITION_BY_NUM) &&
      CheapExchanges.isCheapExchange(e)
    }

  test(
    "skewed repartition(k): split reads, partials re-exchanged with the user's partitioning",
    EveryBuild) {
    val d = run(s =>
      fact(s, skewed = true).repartition(col("k")).groupBy("k")
        .agg(sum("v"), count(lit(1)), avg("d"), max("i")))
    assert(splitMarkers(d, adaptive = true).size == 1, d.plan(on = true, adaptive = true))
    val reexchange = userExchangesOfPartials(d, adaptive = true)
    assert(reexchange.size == 1 && reexchange.head.shuffleOrigin == REPARTITION_BY_COL)
    assert(splitMarkers(d, adaptive = false).isEmpty)
    assert(nodes[SkewAggLocalStageExec](d.plan(on = false, adaptive = true)).isEmpty)
  }

  test("repartition(n, k) keeps n partitions and its origin") {
    val d = run(s =>
      fact(s, skewed = true).repartition(31, col("k")).groupBy("k")
        .agg(max("i"), sum("v")))
    assert(splitMarkers(d, adaptive = true).size == 1, d.plan(on = true, adaptive = true))
    val reexchange = userExchangesOfPartials(d, adaptive = true)
    assert(reexchange.map(e => (e.shuffleOrigin, e.outputPartitioning.numPartitions)) ==
      Seq((REPARTITION_BY_NUM, 31)))
  }

  test("multiple DISTINCTs: the read is split, no exchange is added") {
    val d = run(s =>
      fact(s, skewed = true).repartition(col("k")).groupBy("k")
        .agg(countDistinct("i"), countDistinct("d"), max("v")))
    assert(splitMarkers(d, adaptive = true).size == 1, d.plan(on = true, adaptive = true))
    assert(nodes[ShuffleExchangeLike](d.plan(on = true, adaptive = true)).size ==
      nodes[ShuffleExchangeLike](d.plan(on = false, adaptive = true)).size)
  }

  test("DISTINCT with other aggregates over the flushing aggregate: the merge of keys and " +
    "DISTINCT column right above the user's shuffle reads each group whole (found by fuzzing)") {
    // A (k, w) pair repeats about twice, too little for the flushing aggregate: it passes the hot
    // key's rows through and the user's shuffle stays skewed. Above it Spark merges the partials
    // of each (k, w), then counts w once per row: split reads straight into that merge counted
    // some twice. Split now, each split's rows are merged first and exchanged on (k, w).
    for (adaptiveCoalesce <- Seq("false", "true")) {
      val d = differential(
        s =>
          fact(s, skewed = true).withColumn("w", (col("v") * 7) % 3000)
            .repartition(col("k")).groupBy("k").agg(countDistinct("w"), sum("d"), variance("i")),
        conf :+ (SQLConf.COALESCE_PARTITIONS_ENABLED.key -> adaptiveCoalesce): _*)
      val plan = d.plan(on = true, adaptive = true)
      assert(flushing(d, adaptive = true).nonEmpty)
      assert(splitMarkers(d, adaptive = true).size == 1, plan)
      assert(exchangesOn(plan, "k", "w").nonEmpty, plan)
    }
  }

  test("uniform data: Spark's plan, unchanged") {
    val d = run(s => fact(s, skewed = false).repartition(col("k")).groupBy("k").agg(sum("v")))
    assert(shape(d.plan(on = true, adaptive = true)) == shape(d.plan(on = false, adaptive = true)))
  }

  test("left alone: repartition on a column that is not a grouping key, NO_SKEW_AGG") {
    assert(splitMarkers(
      run(s =>
        fact(s, skewed = true).repartition(col("i")).groupBy("k")
          .agg(sum("v"))),
      adaptive = true).isEmpty)
    assert(splitMarkers(
      run(s =>
        fact(s, skewed = true).repartition(col("k")).groupBy("k")
          .agg(sum("v")).hint("no_skew_agg")),
      adaptive = true).isEmpty)
  }

  test("task slots: the skewed repartition split when planned for 64 slots, left alone on 2") {
    val query = (s: SparkSession) =>
      fact(s, skewed = true).repartition(col("k")).groupBy("k").agg(sum("v"), max("i"))
    val on64 = run(query, SkewAggConf.SKEW_TASK_SLOTS.key -> "64")
    assert(splitMarkers(on64, adaptive = true).size == 1, on64.plan(on = true, adaptive = true))
    val onTwo = run(query, SkewAggConf.SKEW_TASK_SLOTS.key -> "2")
    assert(splitMarkers(onTwo, adaptive = true).isEmpty, onTwo.plan(on = true, adaptive = true))
  }

  test("Spark's default cost model, which would reject the added exchange: left alone, why") {
    val d = run(
      s => fact(s, skewed = true).repartition(col("k")).groupBy("k").agg(sum("v")),
      SQLConf.ADAPTIVE_CUSTOM_COST_EVALUATOR_CLASS.key -> null)
    assert(splitMarkers(d, adaptive = true).isEmpty, d.plan(on = true, adaptive = true))
    val text = SkewAggExplain.explain(d.plan(on = true, adaptive = true))
    assert(
      text.contains("the user's repartition below is skewed, but Spark's default adaptive cost " +
        "model rejects the exchange of partial results skewagg needs. Set " +
        "spark.sql.adaptive.customCostEvaluatorClass=io.skewagg.SkewAggCostEvaluator."),
      text)
  }

  test(
    "fewer keys than slots: 5 keys in 8 partitions, each as large as the median, split by " +
      "the per-slot share, in pieces of at least a quarter of that share") {
    // 256 map tasks write each key: pieces of the 2k minSplitSize would be one map output each
    // (256 per key, 1280 in all); pieces of a quarter of the per-slot share take about 5.
    val d = run(
      s =>
        s.range(0, 200000, 1, 256).select((col("id") % 5).as("k"), (col("id") / 7.0).as("v"))
          .repartition(8, col("k")).groupBy("k").agg(sum("v"), max("v"), count(lit(1))),
      SQLConf.SHUFFLE_PARTITIONS.key -> "8")
    val split = splitMarkers(d, adaptive = true)
    assert(split.size == 1, d.plan(on = true, adaptive = true))
    assert(split.head.rewrite.what.contains("x the per-slot share on 64 slots"), split.head)
    val pieces = nodes[AQEShuffleReadExec](d.plan(on = true, adaptive = true))
      .filter(_.partitionSpecs.exists(_.isInstanceOf[PartialReducerPartitionSpec]))
    assert(pieces.size == 1, d.plan(on = true, adaptive = true))
    // At most about 4 pieces per slot (with one more per partition split, its last, and the
    // partitions read whole: within twice that).
    val specs = pieces.head.partitionSpecs.size
    assert(specs <= 2 * SkewedPartitions.PiecesPerSlot * 64, pieces.head.partitionSpecs)
    assert(specs > 64, pieces.head.partitionSpecs)
  }
}
