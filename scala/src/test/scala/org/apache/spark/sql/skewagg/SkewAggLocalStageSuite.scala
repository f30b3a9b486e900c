package org.apache.spark.sql.skewagg

import org.apache.spark.sql.functions._

import SkewTestData._

/** The executed plan names skewagg's rewrites, with the numbers they were decided on. */
class SkewAggLocalStageSuite extends SkewAggSuiteBase {

  private def markers(d: Differential, adaptive: Boolean): Seq[SkewAggLocalStageExec] =
    nodes[SkewAggLocalStageExec](d.plan(on = true, adaptive))

  test("a user repartition rewrite is named, and counts the rows leaving the local stage") {
    val d = differential(
      s =>
        fact(s, skewed = true).repartition(col("k")).groupBy("k").agg(sum("v"))
          .hint("skew_agg"),
      conf: _*)
    for (adaptive <- Seq(false, true)) {
      val m = markers(d, adaptive)
      assert(m.size == 1, d.plan(on = true, adaptive))
      assert(m.head.simpleString(10) ==
        "SkewAggLocalStage [partial aggregate before the user's repartition]")
      // At most one row per key and map task, and fewer than the 20000 rows read.
      val out = m.head.metrics("numOutputRows").value
      assert(out > 0 && out < 20000, s"rows out of the local stage: $out")
      assert(nodes[SkewAggLocalStageExec](d.plan(on = false, adaptive)).isEmpty)
    }
  }

  test("a skew split names the skewed partition, its size and its ratio to the median") {
    val d = differential(
      s => fact(s, skewed = true).join(dim(s), "k").groupBy("k").agg(sum("v")),
      conf :+ (SkewAggConf.JOIN_LOCAL_AGGREGATE_ENABLED.key -> "false"): _*)
    val m = markers(d, adaptive = true)
    assert(m.size == 1, d.plan(on = true, adaptive = true))
    val text = m.head.simpleString(10)
    assert(
      text.matches(
        """SkewAggLocalStage \[skew split of the join below the aggregate: """ +
          """partition \d+ is .+, \d+x the median .+; \d+% of the stage, \d+x the """ +
          """per-slot share on 64 slots\]"""),
      text)
    assert(m.head.metrics("skewedPartitions").value >= 1)
    assert(markers(d, adaptive = false).isEmpty)
  }

  test("local aggregation before a join is named") {
    val d = differential(
      s =>
        fact(s, skewed = true).join(dim(s), "k").groupBy("k").agg(sum("v"))
          .hint("skew_agg"),
      conf: _*)
    for (adaptive <- Seq(false, true)) {
      assert(
        markers(d, adaptive).map(_.simpleString(10)).contains(
          "SkewAggLocalStage [partial aggregate before the join]"),
        d.plan(on = true, adaptive))
    }
    val unhinted = differential(
      s => fact(s, skewed = true).join(dim(s), "k").groupBy("k").agg(sum("v")),
      conf: _*)
    // Adaptive execution adds whether it merged the rows after the join's shuffle.
    assert(markers(unhinted, adaptive = true).map(_.simpleString(10)).exists(_.startsWith(
      "SkewAggLocalStage [flushing partial aggregate before the join; ")))
  }
}
