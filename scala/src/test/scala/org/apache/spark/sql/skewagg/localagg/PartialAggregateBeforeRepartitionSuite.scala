package org.apache.spark.sql.skewagg.localagg

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.execution.{SparkPlan, WholeStageCodegenExec}
import org.apache.spark.sql.execution.exchange.{
  REPARTITION_BY_COL, REPARTITION_BY_NUM, ShuffleExchangeExec
}
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  Differential, EveryBuild, LineFeatures, PartialAggregates, SkewAggConf, SkewAggSuiteBase,
  SkewTestData, SpreadOverBuilds
}

/** The static rewrite: Spark's partial aggregate with SKEW_AGG, a flushing one without. */
class PartialAggregateBeforeRepartitionSuite extends SkewAggSuiteBase with SpreadOverBuilds {

  /** 30% of rows on key 0, the rest spread over other keys; a null key; NaN and -0.0 values. */
  private def skewed(s: SparkSession): DataFrame = s.range(0, 6000).select(
    when(col("id") % 10 < 3, lit(0L)).when(col("id") === 7, lit(null)).otherwise(col("id") % 500)
      .as("k"),
    when(col("id") === 11, lit(Double.NaN)).when(col("id") === 13, lit(-0.0))
      .otherwise(col("id") / 7.0).as("v"),
    (col("id") % 7).cast("int").as("i"),
    (col("id") % 100).cast("decimal(12,2)").as("d"))

  /** User-origin exchanges whose input is a partial aggregate: what this rule produces. */
  private def partialBeforeUserExchange(plan: SparkPlan): Seq[ShuffleExchangeExec] =
    nodes[ShuffleExchangeExec](plan).filter { e =>
      (e.shuffleOrigin == REPARTITION_BY_COL || e.shuffleOrigin == REPARTITION_BY_NUM) &&
      PartialAggregates.isPartial(e.child)
    }

  private def assertRewritten(d: Differential): Unit = for (adaptive <- Seq(false, true)) {
    assert(partialBeforeUserExchange(d.plan(on = false, adaptive)).isEmpty)
    assert(
      partialBeforeUserExchange(d.plan(on = true, adaptive)).size == 1,
      s"adaptive=$adaptive:\n${d.plan(on = true, adaptive)}")
    // The rewrite moves the user's shuffle; it never adds one (with DISTINCT it can remove some).
    assert(nodes[ShuffleExchangeExec](d.plan(on = true, adaptive)).size <=
      nodes[ShuffleExchangeExec](d.plan(on = false, adaptive)).size)
  }

  private def assertUntouched(d: Differential): Unit = for (adaptive <- Seq(false, true)) {
    assert(
      partialBeforeUserExchange(d.plan(on = true, adaptive)).isEmpty,
      s"adaptive=$adaptive:\n${d.plan(on = true, adaptive)}")
  }

  test("repartition(k).groupBy(k): every partial-capable aggregate family") {
    val d = differential(s =>
      skewed(s).repartition(col("k")).groupBy("k").agg(
        sum("v"),
        count(lit(1)),
        count("v"),
        avg("v"),
        min("i"),
        max("i"),
        first(col("k") * 2),
        last(col("k") + 1),
        stddev("v"),
        variance("v"),
        bool_and(col("i") > 2),
        bool_or(col("i") > 5),
        sum("d"),
        avg("d"),
        approx_count_distinct("i"),
        percentile_approx(col("i"), lit(0.5), lit(10000)),
        sort_array(collect_set("i")),
        size(collect_list("i")),
        count(lit(1)).as("n_filtered")).hint("skew_agg"))
    assertRewritten(d)
    assert(d.rows.size == skewed(spark).select("k").distinct().count())
  }

  test("repartition(n, k) keeps the user's partition count and REPARTITION_BY_NUM origin") {
    val d = differential(s =>
      skewed(s).repartition(5, col("k")).groupBy("k").agg(sum("v"))
        .hint("skew_agg"))
    assertRewritten(d)
    for (adaptive <- Seq(false, true)) {
      val exchange = partialBeforeUserExchange(d.plan(on = true, adaptive)).head
      assert(exchange.shuffleOrigin == REPARTITION_BY_NUM)
      assert(exchange.outputPartitioning.numPartitions == 5)
    }
    withSQLConf(SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> "false") {
      assert(skewed(spark).repartition(5, col("k")).groupBy("k").agg(sum("v")).hint("skew_agg")
        .rdd.getNumPartitions == 5)
    }
  }

  test("DISTRIBUTE BY in SQL, with FILTER and HAVING") {
    skewed(spark).createOrReplaceTempView("skewed_t")
    val d = differential(s =>
      s.sql(
        """SELECT /*+ SKEW_AGG */ k, sum(v) FILTER (WHERE i > 2) AS s, count(*) AS n
        |FROM (SELECT * FROM skewed_t DISTRIBUTE BY k)
        |GROUP BY k HAVING count(*) > 1""".stripMargin))
    assertRewritten(d)
  }

  test("repartition on a subset of the grouping keys") {
    val d = differential(s =>
      skewed(s).repartition(col("k")).groupBy("k", "i").agg(sum("v"))
        .hint("skew_agg"))
    assertRewritten(d)
  }

  test(
    "single DISTINCT aggregates; multiple DISTINCTs: the hint through Spark's rewrite",
    EveryBuild) {
    assertRewritten(differential(s =>
      skewed(s).repartition(col("k")).groupBy("k")
        .agg(countDistinct("i"), sum("v")).hint("skew_agg")))
    // Spark 4's rewrite of multiple DISTINCTs builds new aggregates without the hint: they get the
    // unhinted (flushing) form. On 3.5 the hint rides on the aggregate functions' result ids,
    // which the rewrite keeps: the forced form. The result stays exact either way.
    val multiple = differential(s =>
      skewed(s).repartition(col("k")).groupBy("k")
        .agg(countDistinct("i"), countDistinct("d"), max("v")).hint("skew_agg"))
    assertRewritten(multiple)
    assert(flushing(multiple, adaptive = true).isEmpty == LineFeatures.hintsOnResultIds)
  }

  test("ANSI mode on and off with decimals") {
    for (ansi <- Seq("true", "false")) {
      assertRewritten(differential(
        s => skewed(s).repartition(col("k")).groupBy("k").agg(sum("d"), avg("d")).hint("skew_agg"),
        SQLConf.ANSI_ENABLED.key -> ansi))
    }
  }

  test("through a projection and a filter between the repartition and the aggregate") {
    assertRewritten(differential(s =>
      skewed(s).repartition(col("k"))
        .where(col("i") =!= 3).select(col("k"), (col("v") * 2).as("w"))
        .groupBy("k").agg(sum("w")).hint("skew_agg")))
  }

  test("left alone: a projection that redefines the repartition key") {
    assertUntouched(differential(s =>
      skewed(s).repartition(col("k"))
        .select((col("k") + col("i")).as("k"), col("v")).groupBy("k").agg(sum("v")).hint(
          "skew_agg")))
  }

  test("left alone: repartition on a column that is not a grouping key") {
    assertUntouched(differential(s =>
      skewed(s).repartition(col("i")).groupBy("k").agg(sum("v")).hint("skew_agg")))
  }

  test("left alone: grouping on an expression of the repartition key") {
    assertUntouched(differential(s =>
      skewed(s).repartition(col("k")).groupBy(col("k") % 3).agg(sum("v")).hint("skew_agg")))
  }

  test("left alone: range and round-robin repartitions, global aggregates") {
    assertUntouched(differential(s =>
      skewed(s).repartitionByRange(col("k")).groupBy("k").agg(sum("v")).hint("skew_agg")))
    assertUntouched(differential(s =>
      skewed(s).repartition(4).groupBy("k").agg(sum("v")).hint("skew_agg")))
    assertUntouched(differential(s => skewed(s).repartition(col("k")).agg(sum("v"))))
  }

  test("left alone when spark.skewagg.repartition.enabled is false") {
    assertUntouched(differential(
      s => skewed(s).repartition(col("k")).groupBy("k").agg(sum("v")).hint("skew_agg"),
      SkewAggConf.REPARTITION_ENABLED.key -> "false"))
  }

  test("without the hint: a flushing partial aggregate before the user's shuffle") {
    for (ansi <- Seq("false", "true")) {
      // A map of 64 keys: the 500 other keys pass through, key 0 and the null key are merged.
      val d = differential(
        s =>
          skewed(s).repartition(col("k")).groupBy("k")
            .agg(
              sum("v"),
              count(lit(1)),
              avg("d"),
              min("v"),
              max("i"),
              stddev("v"),
              sum("d"),
              approx_count_distinct("i"),
              expr("count(*) FILTER (WHERE v > 10)")),
        SkewAggConf.LOCAL_AGGREGATE_CAPACITY.key -> "64",
        "spark.sql.ansi.enabled" -> ansi)
      assertRewritten(d)
      for (adaptive <- Seq(false, true)) {
        val Seq(op) = flushing(d, adaptive)
        assert(op.metrics("numPassedThrough").value > 0)
        assert(op.metrics("numOutputRows").value < op.metrics("numInputRows").value * 0.8)
      }
    }
  }

  /**
   * One partition of `rows` rows: with `hot`, 30% on key 0 and the others unique; without, keys
   * 1 to `keys` in a cycle (every key once, then again).
   */
  private def onePartition(s: SparkSession, rows: Long, hot: Boolean, keys: Long = 0): DataFrame =
    s.range(0, rows, 1, 1).select(
      (if (hot) when(col("id") % 10 < 3, lit(0L)).otherwise(col("id") + 1)
       else col("id") % keys + 1).as("k"),
      (col("id") / 7.0).as("v"))

  /** 400,000 rows in 8 partitions: k = 0 on 30% of them, else unique; x unique; v. */
  private def eightTasks(s: SparkSession): DataFrame =
    s.range(0, 400000, 1, 8).select(
      when(col("id") % 10 < 3, lit(0L)).otherwise(col("id") + 1).as("k"),
      col("id").as("x"),
      (col("id") / 7.0).as("v"))

  private def flushingMetrics(d: Differential): Seq[Map[String, Long]] =
    for (adaptive <- Seq(false, true)) yield {
      val Seq(op) = flushing(d, adaptive)
      op.metrics.map { case (name, m) => name -> m.value }
    }

  test("without the hint: relearning decides at a quarter map, the first batch fills it; the " +
    "same in the stage's generated code and without it") {
    for (codegen <- Seq("true", "false")) {
      withSQLConf(SQLConf.WHOLESTAGE_CODEGEN_ENABLED.key -> codegen) { relearning() }
    }
  }

  private def relearning(): Unit = {
    // A map of 4096 keys, so relearning may decide at 1024. Hot key 0 and unique others: the
    // first batch holds 4096 keys (5,851 rows), then 65,536 rows pass through and relearning
    // stops at 1024 keys (about 1,460 rows) instead of another 5,851.
    val capacity = SkewAggConf.LOCAL_AGGREGATE_CAPACITY.key -> "4096"
    val codegen = spark.conf.get(SQLConf.WHOLESTAGE_CODEGEN_ENABLED.key).toBoolean
    val hot = differential(
      s =>
        onePartition(s, 200000, hot = true).repartition(col("k"))
          .groupBy("k").agg(sum("v"), count(lit(1))),
      capacity)
    assertRewritten(hot)
    for (adaptive <- Seq(false, true)) {
      val generated = nodes[WholeStageCodegenExec](hot.plan(on = true, adaptive))
        .exists(_.child.exists(_.isInstanceOf[FlushingPartialAggregateExec]))
      assert(generated == codegen, hot.plan(on = true, adaptive))
    }
    for (m <- flushingMetrics(hot)) {
      assert(m("numLearnedRows") > 5851 && m("numLearnedRows") < 5851 + 2000, m)
      assert(m("numOutputRows") < m("numInputRows") * 0.8, m)
    }
    // 3000 keys in a cycle: no key repeats within the first quarter map, but the first batch
    // fills on, sees every key repeat and merges every row.
    val cyclic = differential(
      s =>
        onePartition(s, 60000, hot = false, keys = 3000)
          .repartition(col("k")).groupBy("k").agg(sum("v")),
      capacity)
    for (m <- flushingMetrics(cyclic)) {
      assert(m("numPassedThrough") == 0 && m("numOutputRows") == 3000, m)
    }
  }

  test("without the hint: a later task decides at a quarter map after one passed rows through") {
    // 8 tasks of 50,000 rows (hot key 0, unique others) on 2 slots, a map of 4096 keys: a task
    // that fills its first batch learns from 5,851 rows and passes the rest through. At most the
    // first two tasks start before any batch decided; the other six learn what those passed
    // ([[LearnedReductions]]) and decide at 1024 keys, from about 1,460 rows each. Those six
    // take the task states the first ones left ([[IdleTaskStates]]), in both runs with skewagg.
    val reusedBefore = IdleTaskStates.reused.get
    val d = differential(
      s =>
        eightTasks(s).repartition(col("k")).groupBy("k").agg(sum("v")),
      SkewAggConf.LOCAL_AGGREGATE_CAPACITY.key -> "4096")
    for (m <- flushingMetrics(d)) {
      assert(m("numLearnedRows") < 2 * 5851 + 6 * 2000, m)
      assert(m("numOutputRows") < m("numInputRows") * 0.8, m)
    }
    assert(IdleTaskStates.reused.get - reusedBefore >= 2 * 6)
  }

  test("without the hint: a later task judges kept keys after a quarter map once one dropped") {
    // 8 tasks of 50,000 rows on 2 slots, a map of 4096 keys, repartition(k).groupBy(k, x): 30%
    // of rows on k = 0, each with an x of its own. Every task keeps the (0, x) of its first batch
    // and drops them on trial. At most the first two tasks start before a trial was judged and
    // probe 4096 rows; the other six learn that a trial of the run dropped its keys
    // ([[LearnedReductions]]) and judge theirs after 1024. Each judging all 4096: 32,768 probes.
    val d = differential(
      s =>
        eightTasks(s).repartition(col("k")).groupBy("k", "x").agg(sum("v")),
      SkewAggConf.LOCAL_AGGREGATE_CAPACITY.key -> "4096")
    for (m <- flushingMetrics(d)) {
      assert(m("numKeptKeysDropped") >= 8, m)
      assert(m("numProbedOnTrial") < 2 * 4096 + 6 * 1024 + 8 * 100, m)
      assert(m("numOutputRows") == 400000, m)
    }
  }

  test("without the hint: relearning that passes rows through again waits twice as long") {
    // A map of 64 keys and unique keys: every learning batch passes the rows after it through,
    // for 1024 rows, then 2048, ... up to 16384. At a fixed 1024 it would flush about 180 times.
    val d = differential(
      s =>
        onePartition(s, 100000, hot = false, keys = 1000000)
          .repartition(col("k")).groupBy("k").agg(sum("v")),
      SkewAggConf.LOCAL_AGGREGATE_CAPACITY.key -> "64")
    for (m <- flushingMetrics(d)) {
      assert(m("numFlushes") < 30 && m("numPassedThrough") > 99000, m)
    }
  }

  test("without the hint: a hot shuffle key spread over many grouping keys is merged") {
    // repartition(k).groupBy(k, x): 30% of rows on k = 0, spread over 300 values of x, the
    // others unique. A batch of a 4096-key map (about 4,400 rows) merges about 4 rows per (0, x),
    // under 8 times its mean rows per key, but k = 0 holds about 30% of its rows: the (0, x)
    // stay in the map. The same when the repartition hashes an expression of k.
    for ((by, shown) <- Seq(col("k") -> "heavy by [k]", col("k") + 1 -> "heavy by [(k + ")) {
      val d = differential(
        s =>
          SkewTestData.hotKeySpreadOverX(s)
            .repartition(by).groupBy("k", "x").agg(sum("v"), count(lit(1))),
        SkewAggConf.LOCAL_AGGREGATE_CAPACITY.key -> "4096")
      assertRewritten(d)
      for (adaptive <- Seq(false, true)) {
        val Seq(op) = flushing(d, adaptive)
        assert(op.simpleString(10).contains(shown), op.simpleString(10))
      }
      // 140,000 unique rows pass through. Tried: 141,202 rows out; without judging by k, 198,660.
      for (m <- flushingMetrics(d)) {
        assert(m("numOutputRows") < 160000, m)
      }
    }
  }

  test("without the hint: single and multiple DISTINCTs, subset keys") {
    assertRewritten(differential(s =>
      skewed(s).repartition(col("k")).groupBy("k")
        .agg(countDistinct("i"), sum("v"))))
    assertRewritten(differential(s =>
      skewed(s).repartition(col("k")).groupBy("k")
        .agg(countDistinct("i"), countDistinct("d"), max("v"))))
    assertRewritten(differential(s =>
      skewed(s).repartition(col("k")).groupBy("k", "i")
        .agg(sum("v"))))
  }

  test("without the hint, left alone: holistic aggregates, localAggregate.enabled=false") {
    assertUntouched(differential(s =>
      skewed(s).repartition(col("k")).groupBy("k")
        .agg(sum("v"), size(collect_list("i")))))
    assertUntouched(differential(
      s => skewed(s).repartition(col("k")).groupBy("k").agg(sum("v")),
      SkewAggConf.REPARTITION_LOCAL_AGGREGATE_ENABLED.key -> "false"))
    assertUntouched(differential(s =>
      skewed(s).repartition(col("k")).groupBy("k").agg(sum("v"))
        .hint("no_skew_agg")))
  }
}
