package org.apache.spark.sql.skewagg.explain

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  EveryBuild, LineFeatures, PlanNodes, SkewAggConf, SkewAggDecision, RecordedDecisions,
  SkewAggSuiteBase, SpreadOverBuilds
}

import org.apache.spark.sql.skewagg.SkewTestData._

/** The explanation text for each kind of decision, and its section in Spark's EXPLAIN. */
class RecordedDecisionsSuite extends SkewAggSuiteBase with SpreadOverBuilds {

  private val adaptiveOn = SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> "true"

  /**
   * Local aggregation before a join or a user repartition would take the skew away first: off,
   * except where said.
   */
  private val base = conf ++ Seq(
    adaptiveOn,
    SkewAggConf.JOIN_LOCAL_AGGREGATE_ENABLED.key -> "false",
    SkewAggConf.REPARTITION_LOCAL_AGGREGATE_ENABLED.key -> "false")

  /** Runs `df` and explains its executed (for adaptive: final) plan. */
  private def explainAfterRun(df: DataFrame): String = {
    df.collect()
    SkewAggExplain.explain(df.queryExecution.executedPlan)
  }

  private def skewedJoinAgg(): DataFrame =
    fact(spark, skewed = true).join(dim(spark), "k").groupBy("k").agg(sum("v"))

  test("a rewritten aggregate names the rewrite and the skewed partition's numbers") {
    withSQLConf(base: _*) {
      val text = explainAfterRun(skewedJoinAgg())
      assert(text.contains("aggregate 1: group by [k] computing [sum(v)]"), text)
      assert(
        text.contains("rewritten: skew split of the join below the aggregate: partition"),
        text)
      assert(text.contains("the median"), text)
    }
  }

  test("a refusal and a rewrite by the same rewrite contradict; by different rewrites not") {
    import SkewAggDecision.{Refused, Rewritten}
    val joinSplit = Rewritten("skew split of the join below the aggregate: ...", "join split")
    val localAggregate = Rewritten("flushing partial aggregate before the join", "local")
    val joinRefused = Refused("the join below is skewed, but ...", "join split")
    val nothing = Refused("skewagg is off ...", Refused.EveryRewrite)
    assert(SkewAggDecision.contradictions(Seq(localAggregate, joinRefused)).isEmpty)
    assert(
      SkewAggDecision.contradictions(Seq(joinRefused, joinSplit)) == Seq(joinRefused -> joinSplit))
    assert(SkewAggDecision.contradictions(Seq(localAggregate, nothing)) == Seq(
      nothing -> localAggregate))
    assert(SkewAggDecision.contradictions(Seq(nothing)).isEmpty)
  }

  test("local aggregation before the join names itself") {
    withSQLConf(conf :+ adaptiveOn: _*) {
      val text = explainAfterRun(skewedJoinAgg())
      assert(text.contains("rewritten: flushing partial aggregate before the join"), text)
    }
  }

  test("not skewed: the largest partition and the floor or per-slot share it stayed under") {
    withSQLConf(base: _*) {
      val uniform = fact(spark, skewed = false).join(dim(spark), "k").groupBy("k").agg(sum("v"))
      val text = explainAfterRun(uniform)
      assert(
        text.contains("not skewed: in the join's input shuffles below, the largest partition"),
        text)
      assert(
        text.contains(
          "not more than 5.0x the per-slot share 3.3 KiB on 64 task slots " +
            "(spark.skewagg.skew.taskSlots)"),
        text)
    }
    withSQLConf(base ++ Seq(SkewAggConf.SKEW_MIN_PARTITION_SIZE.key -> "16MB"): _*) {
      val text = explainAfterRun(skewedJoinAgg())
      assert(text.contains("below the 16.0 MiB floor (spark.skewagg.skew.minPartitionSize)"), text)
    }
    withSQLConf(base ++ Seq(
      SkewAggConf.SKEW_MIN_PARTITION_SIZE.key -> "0",
      SkewAggConf.SKEW_FACTOR.key -> "1000"): _*) {
      val text = explainAfterRun(skewedJoinAgg())
      assert(text.contains("not more than 1000.0x the per-slot share"), text)
    }
  }

  test("left alone: the NO_SKEW_AGG hint, and skewagg switched off") {
    withSQLConf(base: _*) {
      val hinted = fact(spark, skewed = true).join(dim(spark), "k").groupBy("k").agg(sum("v"))
        .hint("no_skew_agg")
      assert(explainAfterRun(hinted).contains("left alone: hint NO_SKEW_AGG."))
    }
    withSQLConf(base ++ Seq(SkewAggConf.ENABLED.key -> "false"): _*) {
      assert(explainAfterRun(skewedJoinAgg())
        .contains("left alone: skewagg is off (spark.skewagg.enabled=false)."))
    }
  }

  test("left alone under Spark's default cost model: recorded by the rule, naming the setting") {
    withSQLConf(base ++ Seq(
      SQLConf.ADAPTIVE_CUSTOM_COST_EVALUATOR_CLASS.key -> null): _*) {
      val text = explainAfterRun(skewedJoinAgg())
      assert(text.contains("Spark's default adaptive cost model rejects"), text)
      assert(
        text.contains(
          "spark.sql.adaptive.customCostEvaluatorClass=io.skewagg.SkewAggCostEvaluator"),
        text)
    }
  }

  test("left alone although skewed: recorded by the rules where nothing can be split") {
    withSQLConf(base: _*) {
      val outer = fact(spark, skewed = true).join(dim(spark), Seq("k"), "right_outer")
        .groupBy("k").agg(sum("v"))
      val text = explainAfterRun(outer)
      assert(
        text.contains("the join below is skewed on its left side, which Spark does not split " +
          "in a RIGHT OUTER join"),
        text)
      // One map task (a single-partition range) writes the whole repartition.
      val oneWriter = spark.range(0, 20000, 1, 1)
        .select(
          when(col("id") % 10 < 3, lit(0L)).otherwise(col("id") % 1000).as("k"),
          col("id").as("v"))
        .repartition(col("k")).groupBy("k").agg(sum("v"))
      val text2 = explainAfterRun(oneWriter)
      assert(text2.contains("one map task wrote each skewed partition"), text2)
    }
  }

  test("left alone although skewed: a skewed partition smaller than two pieces of the split") {
    // The same skewed join, split with pieces of 2 KiB, left whole with pieces of 1 GiB.
    withSQLConf(base :+ (SkewAggConf.SKEW_MIN_SPLIT_SIZE.key -> "1g"): _*) {
      val text = explainAfterRun(skewedJoinAgg())
      assert(
        text.contains("left alone: the join below is skewed (its left side's partition "),
        text)
      assert(
        text.contains("but its map outputs do not fill two pieces of 1024.0 MiB, the split " +
          "size (the larger of spark.skewagg.skew.minSplitSize and the side's average " +
          "partition), so Spark's split reads it whole. Lower spark.skewagg.skew.minSplitSize"),
        text)
      assert(!text.contains("does not split in a"), text)
      assert(!text.contains("rewritten"), text)
    }
    withSQLConf(base: _*) {
      assert(explainAfterRun(skewedJoinAgg()).contains("rewritten: skew split of the join"))
    }
  }

  test("adaptive plans not yet run, and plans without adaptive execution") {
    withSQLConf(base: _*) {
      val text = SkewAggExplain.explain(skewedJoinAgg().queryExecution.executedPlan)
      assert(text.contains("not decided yet"), text)
    }
    withSQLConf(base :+ (SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> "false"): _*) {
      val text = explainAfterRun(skewedJoinAgg())
      assert(text.contains("adaptive execution is off (spark.sql.adaptive.enabled=false)"), text)
    }
  }

  test("a plain groupBy: Spark's partial aggregation already combines a hot key per task") {
    withSQLConf(base: _*) {
      val text = explainAfterRun(fact(spark, skewed = true).groupBy("k").agg(sum("v")))
      assert(text.contains("already aggregates each task's rows before the shuffle"), text)
      assert(SkewAggExplain.explain(spark.range(3).queryExecution.executedPlan)
        .contains("no aggregate"))
    }
  }

  test("a few keys whose partial states are heavy to merge: merged in two levels, not 'nothing'") {
    // 4 keys, 40 map tasks, a sketch per key and task: the final merge reads 40 states per key.
    val heavy = base ++ Seq(
      SkewAggConf.SKEW_TASK_SLOTS.key -> "64",
      SkewAggConf.SKEW_MIN_PARTITION_SIZE.key -> "1k")
    withSQLConf(heavy: _*) {
      val sketches = spark.range(0, 40000, 1, 40)
        .groupBy((col("id") % 4).as("k")).agg(percentile_approx(col("id"), lit(0.5), lit(10000)))
      val text = explainAfterRun(sketches)
      assert(
        text.matches("(?s).*heavy partial states merged in two levels: the final merge reads one " +
          "partial state per map task and key, partition \\d+ holds .* of the states of 40 map " +
          "tasks \\(.* a state\\), \\d+x the per-slot share .* on 64 task slots.*"),
        text)
      assert(!text.contains("nothing to split"), text)
    }
    // Switched off: the merge named with the setting.
    withSQLConf(heavy :+ (SkewAggConf.PARTIAL_STATES_SPLIT_ENABLED.key -> "false"): _*) {
      val text = explainAfterRun(spark.range(0, 40000, 1, 40)
        .groupBy((col("id") % 4).as("k")).agg(percentile_approx(col("id"), lit(0.5), lit(10000))))
      assert(text.contains(SkewAggConf.PARTIAL_STATES_SPLIT_ENABLED.key + "=false"), text)
      assert(!text.contains("nothing to split"), text)
    }
    // The same keys' sums: states of a few bytes; nothing to split.
    withSQLConf(heavy: _*) {
      val sums = spark.range(0, 40000, 1, 40).groupBy((col("id") % 4).as("k")).agg(sum("id"))
      assert(explainAfterRun(sums).contains("there is nothing to split"))
    }
    // Before it runs, adaptive execution has not measured the exchange: pending.
    withSQLConf(heavy: _*) {
      val planned = spark.range(0, 40000, 1, 40).groupBy((col("id") % 4).as("k")).agg(sum("id"))
      val text = SkewAggExplain.explain(planned.queryExecution.executedPlan)
      assert(text.contains("not decided yet"), text)
    }
  }

  private def percentileQuery(): DataFrame =
    fact(spark, skewed = true).groupBy("k").agg(percentile(col("v"), lit(0.5)))

  /** "one key at a time (HotKeySplitAggregate): 20,000 rows read into 701 keys", for `fact`. */
  private def oneKeyAtATime: String = oneKeyAtATime("HotKeySplitAggregate")

  private def oneKeyAtATime(operator: String): String = {
    val keys = fact(spark, skewed = true).select("k").distinct().count()
    f"rewritten: one key at a time ($operator): 20,000 rows read into $keys%,d keys"
  }

  test("a percentile query: one key at a time, its hot key split, with the sample's numbers") {
    withSQLConf(base :+ (SkewAggConf.SINGLE_KEY_SPLIT_MIN_KEY_ROWS.key -> "100"): _*) {
      val text = explainAfterRun(percentileQuery())
      assert(text.contains("aggregate 1: group by [k] computing [percentile(v, 0.5"), text)
      assert(text.contains(oneKeyAtATime + "; 1 hot key split by value into"), text)
      assert(text.contains("the largest key estimated at"), text)
      assert(!text.contains("no aggregate"), text)
    }
  }

  test("a percentile query unsplit: under minKeyRows, or the split switched off") {
    withSQLConf(base: _*) {
      val text = explainAfterRun(percentileQuery())
      assert(
        text.contains(oneKeyAtATime + "; no hot key split: the largest key estimated at"),
        text)
      assert(text.contains("under spark.skewagg.singleKey.split.minKeyRows=1000000"), text)
    }
    withSQLConf(base :+ (SkewAggConf.SINGLE_KEY_SPLIT_ENABLED.key -> "false"): _*) {
      val text = explainAfterRun(percentileQuery())
      assert(text.contains(oneKeyAtATime("SingleKeyAggregate")), text)
      assert(
        text.contains("hot keys not split by value: switched off " +
          "(spark.skewagg.singleKey.split.enabled=false)."),
        text)
    }
    withSQLConf(base :+ (SkewAggConf.SINGLE_KEY_ENABLED.key -> "false"): _*) {
      val text = explainAfterRun(percentileQuery())
      assert(
        text.contains("not one key at a time: switched off " +
          "(spark.skewagg.singleKey.enabled=false)."),
        text)
    }
  }

  test("hot keys not split: a percentile with FILTER, or input that is not deterministic") {
    withSQLConf(base :+ (SkewAggConf.SINGLE_KEY_SPLIT_MIN_KEY_ROWS.key -> "100"): _*) {
      val filtered = fact(spark, skewed = true).groupBy("k")
        .agg(expr("percentile(v, 0.5) FILTER (WHERE i > 0)"))
      val text = explainAfterRun(filtered)
      assert(
        text.contains("hot keys not split by value: percentile with FILTER need all of a " +
          "key's rows in one task"),
        text)
      val random = fact(spark, skewed = true).withColumn("v", col("v") + rand(1))
        .groupBy("k").agg(percentile(col("v"), lit(0.5)))
      val text2 = explainAfterRun(random)
      assert(text2.contains("hot keys not split by value: the input is not deterministic"), text2)
    }
  }

  test("a mode query, and collect_list with and without its opt-in") {
    withSQLConf(base: _*) {
      val mode = fact(spark, skewed = true).groupBy("k").agg(expr("mode(i)"))
      val text = explainAfterRun(mode)
      assert(text.contains("computing [mode(i)]"), text)
      assert(text.contains(oneKeyAtATime("SingleKeyAggregate")), text)
      assert(text.contains("hot keys not split by value: only percentiles are split"), text)
      val collect = fact(spark, skewed = true).groupBy("k").agg(collect_list("i"))
      val text2 = explainAfterRun(collect)
      assert(
        text2.contains("collect_list / collect_set not one key at a time: switched off " +
          "(spark.skewagg.singleKey.collect.enabled=false)."),
        text2)
    }
    withSQLConf(base :+ (SkewAggConf.SINGLE_KEY_COLLECT_ENABLED.key -> "true"): _*) {
      val collect = fact(spark, skewed = true).groupBy("k").agg(collect_list("i"))
      val text = explainAfterRun(collect)
      assert(text.contains("computing [collect_list(i)]"), text)
      assert(text.contains(oneKeyAtATime("SingleKeyAggregate")), text)
      assert(text.contains("hot keys not split by value: only percentiles are split"), text)
    }
  }

  test("a skewed join with each switch off names the switch") {
    // Both off: each rule that would have rewritten it says so.
    withSQLConf(base :+ (SkewAggConf.JOIN_SKEW_SPLIT_ENABLED.key -> "false"): _*) {
      val text = explainAfterRun(skewedJoinAgg())
      assert(
        text.contains("no skew split of the join below: switched off " +
          "(spark.skewagg.join.skewSplit.enabled=false)."),
        text)
      assert(
        text.contains("no local aggregation before the join: switched off " +
          "(spark.skewagg.join.localAggregate.enabled=false)."),
        text)
      assert(!text.contains("rewritten"), text)
    }
    // Local aggregation off: the skew split rewrites it, and the switched-off rule is named.
    withSQLConf(base: _*) {
      val text = explainAfterRun(skewedJoinAgg())
      assert(text.contains("rewritten: skew split of the join below the aggregate"), text)
      assert(text.contains("no local aggregation before the join: switched off"), text)
    }
    // The skew split off: local aggregation before the join rewrites it.
    withSQLConf(conf ++ Seq(adaptiveOn, SkewAggConf.JOIN_SKEW_SPLIT_ENABLED.key -> "false"): _*) {
      val text = explainAfterRun(skewedJoinAgg())
      assert(text.contains("rewritten: flushing partial aggregate before the join"), text)
    }
  }

  test("a skewed repartition with its switch off names the switch") {
    withSQLConf(base :+ (SkewAggConf.REPARTITION_ENABLED.key -> "false"): _*) {
      val q = fact(spark, skewed = true).repartition(col("k")).groupBy("k").agg(sum("v"))
      val text = explainAfterRun(q)
      assert(
        text.contains("no split read of the skewed repartition below: switched off " +
          "(spark.skewagg.repartition.enabled=false)."),
        text)
    }
  }

  test(
    "EXPLAIN EXTENDED shows the same text through spark.sql.extendedExplainProviders",
    EveryBuild) {
    assume(LineFeatures.explainProviders, "Spark 3.5 has no extended explain providers")
    withSQLConf(base ++ Seq(
      "spark.sql.extendedExplainProviders" -> "io.skewagg.SkewAggExplainGenerator"): _*) {
      val df = skewedJoinAgg()
      df.collect()
      val text = df.queryExecution.toString
      assert(text.contains("== Extended Information (skewagg) =="), text)
      assert(text.contains("rewritten: skew split of the join below the aggregate"), text)
    }
  }

  /** The not-skewed decisions rules recorded on the executed plan of `df`, once run. */
  private def notSkewedRecorded(df: DataFrame): Seq[SkewAggDecision.NotSkewed] = {
    df.collect()
    PlanNodes.all(df.queryExecution.executedPlan).flatMap(RecordedDecisions.of).collect {
      case n: SkewAggDecision.NotSkewed => n
    }.distinct
  }

  test("not skewed: recorded by the rule that measured, with its numbers") {
    withSQLConf(base: _*) {
      val join = notSkewedRecorded(
        fact(spark, skewed = false).join(dim(spark), "k").groupBy("k").agg(sum("v")))
      assert(join.map(_.where) == Seq("the join's input shuffles below"), join)
      assert(join.head.largest > 0 && join.head.median > 0 && join.head.factor == 5.0, join)
      val repartition = notSkewedRecorded(
        fact(spark, skewed = false).repartition(col("k")).groupBy("k").agg(sum("v")))
      assert(repartition.map(_.where) == Seq("the user's repartition below"), repartition)
      // Skewed: nothing recorded as not skewed.
      assert(notSkewedRecorded(skewedJoinAgg()).isEmpty)
    }
    withSQLConf(base ++ Seq(SkewAggConf.SKEW_MIN_PARTITION_SIZE.key -> "16MB"): _*) {
      val floor = notSkewedRecorded(skewedJoinAgg())
      assert(floor.map(_.floor) == Seq(16L << 20), floor)
      assert(floor.head.text.contains("below the 16.0 MiB floor"), floor)
    }
  }

  test("not skewed on the slots it runs on: the per-slot share and the slots named") {
    withSQLConf(base :+ (SkewAggConf.SKEW_TASK_SLOTS.key -> "2"): _*) {
      val text = explainAfterRun(skewedJoinAgg())
      assert(text.contains("not more than 5.0x the per-slot share"), text)
      assert(text.contains("on 2 task slots (spark.skewagg.skew.taskSlots)"), text)
    }
  }
}
