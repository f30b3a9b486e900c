package org.apache.spark.sql.skewagg.skewsplit

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.execution.adaptive.{AQEShuffleReadExec, ShuffleQueryStageExec}
import org.apache.spark.sql.execution.joins.ShuffledJoin
import org.apache.spark.sql.execution.exchange.ShuffleExchangeLike
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  CheapExchanges, Differential, EveryBuild, SkewAggConf, SkewAggSuiteBase, SkewedPartitions,
  SpreadOverBuilds
}

import org.apache.spark.sql.skewagg.SkewTestData._

class SplitSkewedJoinBelowAggregateSuite extends SkewAggSuiteBase with SpreadOverBuilds {

  private def skewJoins(d: Differential, on: Boolean): Int =
    nodes[ShuffledJoin](d.plan(on, adaptive = true)).count(_.isSkewJoin)

  private def cheapExchanges(d: Differential, on: Boolean, adaptive: Boolean): Int =
    nodes[ShuffleExchangeLike](d.plan(on, adaptive)).count(CheapExchanges.isCheapExchange)

  /**
   * Split (and, unless Spark already shuffles the partials, a cheap exchange added) with skewagg
   * and AQE on; the vanilla plan otherwise.
   */
  private def assertSplit(d: Differential, addsExchange: Boolean = true): Unit = {
    assert(skewJoins(d, on = false) == 0)
    assert(skewJoins(d, on = true) >= 1, d.plan(on = true, adaptive = true))
    val added = cheapExchanges(d, on = true, adaptive = true) -
      cheapExchanges(d, on = false, adaptive = true)
    assert(if (addsExchange) added > 0 else added == 0, d.plan(on = true, adaptive = true))
    // Without adaptive execution there are no runtime statistics: no split, the same exchanges.
    // (Not a full plan comparison: Spark orders multiple DISTINCTs' Expand projections by hash.)
    assert(nodes[ShuffledJoin](d.plan(on = true, adaptive = false)).forall(!_.isSkewJoin))
    assert(nodes[ShuffleExchangeLike](d.plan(on = true, adaptive = false)).size ==
      nodes[ShuffleExchangeLike](d.plan(on = false, adaptive = false)).size)
  }

  private def assertNoSplit(d: Differential): Unit = {
    assert(skewJoins(d, on = true) == 0, d.plan(on = true, adaptive = true))
  }

  /** Local aggregation before the join would remove the skew first: these tests turn it off. */
  private def run(query: SparkSession => DataFrame, extra: (String, String)*): Differential =
    differential(
      query,
      conf ++ Seq(SkewAggConf.JOIN_LOCAL_AGGREGATE_ENABLED.key -> "false") ++
        extra: _*)

  test("with local aggregation on: split where it cannot apply (aggregates read both sides)") {
    assertSplit(differential(
      s =>
        fact(s, skewed = true).join(dim(s), "k").groupBy("k")
          .agg(sum(col("v") * col("attr")), max("i")),
      conf: _*))
  }

  test(
    "join on the key, then groupBy the key: skewed partition split, partials exchanged",
    EveryBuild) {
    assertSplit(run(s =>
      fact(s, skewed = true).join(dim(s), "k").groupBy("k")
        .agg(sum("v"), count(lit(1)), avg("d"), max("i"))))
  }

  test("grouping by a column of the other side as well") {
    assertSplit(run(s =>
      fact(s, skewed = true).join(dim(s), "k").groupBy("k", "attr")
        .agg(sum("v"))))
  }

  test("single and multiple DISTINCT aggregates above the join") {
    assertSplit(run(s =>
      fact(s, skewed = true).join(dim(s), "k").groupBy("k")
        .agg(countDistinct("i"), sum("v"))))
    // Multiple DISTINCTs: Spark already shuffles the Expand's partials; only the split is new.
    assertSplit(
      run(s =>
        fact(s, skewed = true).join(dim(s), "k").groupBy("k")
          .agg(countDistinct("i"), countDistinct("d"))),
      addsExchange = false)
  }

  test("left outer, right outer and left semi joins that keep the skewed side splittable") {
    assertSplit(run(s =>
      fact(s, skewed = true).join(dim(s), Seq("k"), "left_outer")
        .groupBy("k").agg(sum("v"))))
    assertSplit(run(s =>
      dim(s).join(fact(s, skewed = true), Seq("k"), "right_outer")
        .groupBy("k").agg(sum("v"))))
    assertSplit(run(s =>
      fact(s, skewed = true).join(dim(s), Seq("k"), "left_semi")
        .groupBy("k").agg(sum("v"))))
  }

  test("shuffled hash join") {
    assertSplit(run(s =>
      fact(s, skewed = true).join(dim(s).hint("shuffle_hash"), "k").groupBy("k").agg(sum("v"))))
  }

  test("uniform data: no partition is skewed, the plan is vanilla's") {
    val d = run(s => fact(s, skewed = false).join(dim(s), "k").groupBy("k").agg(sum("v")))
    assertNoSplit(d)
    assert(cheapExchanges(d, on = true, adaptive = true) == cheapExchanges(
      d,
      on = false,
      adaptive = true))
  }

  test("left alone with Spark's default cost model, which would reject the exchange") {
    assertNoSplit(run(
      s => fact(s, skewed = true).join(dim(s), "k").groupBy("k").agg(sum("v")),
      SQLConf.ADAPTIVE_CUSTOM_COST_EVALUATOR_CLASS.key -> null))
  }

  test("left alone when spark.skewagg.join.skewSplit.enabled is false") {
    assertNoSplit(run(
      s => fact(s, skewed = true).join(dim(s), "k").groupBy("k").agg(sum("v")),
      SkewAggConf.JOIN_SKEW_SPLIT_ENABLED.key -> "false"))
  }

  /** Reads of a partial-result exchange: (partitions read, partitions written). */
  private def partialResultReads(d: Differential): Seq[(Int, Int)] =
    nodes[AQEShuffleReadExec](d.plan(on = true, adaptive = true)).collect {
      case r @ AQEShuffleReadExec(s: ShuffleQueryStageExec, _)
          if CheapExchanges.isCheapExchange(s.shuffle) && r.isCoalescedRead =>
        (r.partitionSpecs.size, s.shuffle.numPartitions)
    }

  test("the partial results are read in coalesced partitions, though Spark's coalescing is off") {
    val query = (s: SparkSession) =>
      fact(s, skewed = true).join(dim(s), "k").groupBy("k").agg(sum("v"))
    val d = run(query)
    assertSplit(d)
    assert(partialResultReads(d).nonEmpty, d.plan(on = true, adaptive = true))
    assert(partialResultReads(d).forall { case (read, written) => read < written })

    val off = run(query, SkewAggConf.EXCHANGE_COALESCE_ENABLED.key -> "false")
    assertSplit(off)
    assert(partialResultReads(off).isEmpty, off.plan(on = true, adaptive = true))
  }

  test("task slots: the skewed join split when planned for 64 slots, left alone on 2") {
    val query = (s: SparkSession) =>
      fact(s, skewed = true).join(dim(s), "k").groupBy("k").agg(sum("v"), count(lit(1)))
    assertSplit(run(query, SkewAggConf.SKEW_TASK_SLOTS.key -> "64"))
    // On 2 slots the hot partition (about a third of the stage) is shorter than an even share.
    assertNoSplit(run(query, SkewAggConf.SKEW_TASK_SLOTS.key -> "2"))
  }

  test(
    "fewer keys than slots: every partition of the join skewed, its pieces at least a quarter " +
      "of the per-slot share (each reads the other side's partition again)") {
    // 5 keys in 8 partitions, each as large as the median; 256 map tasks wrote each key: pieces
    // of the 2k minSplitSize would be one map output each, 256 per key (1280 in all).
    val d = run(
      s => {
        val facts =
          s.range(0, 200000, 1, 256).select((col("id") % 5).as("k"), (col("id") / 7.0).as("v"))
        facts.join(s.range(0, 5).select(col("id").as("k"), (col("id") * 2).as("attr")), "k")
          .groupBy("k").agg(sum(col("v") * col("attr")), count(lit(1)))
      },
      SQLConf.SHUFFLE_PARTITIONS.key -> "8")
    assertSplit(d)
    val reads = nodes[AQEShuffleReadExec](d.plan(on = true, adaptive = true))
      .filter(r => r.child.isInstanceOf[ShuffleQueryStageExec] && r.hasSkewedPartition)
    assert(reads.nonEmpty, d.plan(on = true, adaptive = true))
    // At most about 4 pieces per slot (within twice that, with the last piece of each split).
    reads.foreach(r =>
      assert(r.partitionSpecs.size <= 2 * SkewedPartitions.PiecesPerSlot * 64, r.partitionSpecs))
  }
}
