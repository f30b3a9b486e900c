package org.apache.spark.sql.skewagg.localagg

import org.apache.spark.sql.{AnalysisException, Column, DataFrame, Encoder, Encoders, SparkSession}
import org.apache.spark.sql.catalyst.plans.logical.Aggregate
import org.apache.spark.sql.execution.{RangeExec, SparkPlan}
import org.apache.spark.sql.catalyst.expressions.aggregate.PartialMerge
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.execution.exchange.{BroadcastExchangeExec, ShuffleExchangeLike}
import org.apache.spark.sql.execution.joins.{BaseJoinExec, BroadcastHashJoinExec, ShuffledJoin}
import org.apache.spark.sql.expressions.Aggregator
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  Differential, EveryBuild, PartialAggregates, SkewAggConf, SkewAggHints, SkewAggLocalStageExec,
  SkewAggSuiteBase, SpreadOverBuilds
}
import org.apache.spark.sql.skewagg.explain.SkewAggExplain

import org.apache.spark.sql.skewagg.SkewTestData._

/** A typed Aggregator: sum of squares. */
object SumOfSquares extends Aggregator[Double, Double, Double] {
  def zero: Double = 0.0
  def reduce(b: Double, a: Double): Double = b + a * a
  def merge(b1: Double, b2: Double): Double = b1 + b2
  def finish(b: Double): Double = b
  def bufferEncoder: Encoder[Double] = Encoders.scalaDouble
  def outputEncoder: Encoder[Double] = Encoders.scalaDouble
}

class LocalAggregateBeforeJoinSuite extends SkewAggSuiteBase with SpreadOverBuilds {

  /** `dim` with duplicate keys: keys divisible by 3 appear twice, key 0 three times. */
  private def dimWithDuplicates(s: SparkSession): DataFrame = dim(s)
    .union(dim(s).where(col("k") % 3 === 0))
    .union(dim(s).where(col("k") === 0))

  /**
   * Skewed `fact` with `d` a decimal(7, 2): its sums keep 17 digits (a long in a row), which the
   * rewrite takes without the hint; wider ones it leaves alone (see the test of decimals).
   */
  private def narrowFact(s: SparkSession): DataFrame =
    fact(s, skewed = true).withColumn("d", col("d").cast("decimal(7,2)"))

  /** A join whose subtree aggregates partially before the join's input. */
  private def aggregatesBeforeJoin(plan: SparkPlan): Boolean =
    nodes[BaseJoinExec](plan).exists(_.children.exists(c =>
      find(c)(PartialAggregates.isPartial).isDefined))

  private def assertLocal(d: Differential): Unit = for (adaptive <- Seq(false, true)) {
    assert(!aggregatesBeforeJoin(d.plan(on = false, adaptive)))
    assert(aggregatesBeforeJoin(d.plan(on = true, adaptive)), d.plan(on = true, adaptive))
  }

  private def assertNotLocal(d: Differential): Unit = for (adaptive <- Seq(false, true)) {
    assert(!aggregatesBeforeJoin(d.plan(on = true, adaptive)), d.plan(on = true, adaptive))
  }

  private def run(query: SparkSession => DataFrame): Differential = differential(query, conf: _*)

  test("inner join, every partially aggregatable family, duplicate keys on the other side") {
    val squares = udaf(SumOfSquares)
    assertLocal(run(s =>
      fact(s, skewed = true).join(dimWithDuplicates(s), "k").groupBy("k")
        .agg(
          sum("v"),
          count(lit(1)),
          count("v"),
          avg("d"),
          min("i"),
          max("i"),
          stddev("v"),
          variance("d"),
          bool_and(col("i") > 2),
          sum("d"),
          approx_count_distinct("i"),
          sort_array(collect_set("i")),
          size(collect_list("i")),
          percentile(col("i"), lit(0.5)),
          squares(col("v")),
          expr("sum(v) FILTER (WHERE i > 3)"))
        .hint("skew_agg")))
  }

  test("grouping by columns of the other side, or only by them") {
    assertLocal(run(s =>
      fact(s, skewed = true).join(dimWithDuplicates(s), "k")
        .groupBy("k", "attr").agg(sum("v"), count(lit(1))).hint("skew_agg")))
    assertLocal(run(s =>
      fact(s, skewed = true).join(dimWithDuplicates(s), "k")
        .groupBy("attr").agg(sum("v"), avg("i")).hint("skew_agg")))
  }

  test("outer and semi joins that keep only the aggregated side") {
    assertLocal(
      run(s =>
        fact(s, skewed = true).join(dim(s).where(col("k") < 500), Seq("k"), "left_outer").groupBy(
          "k").agg(sum("v"), count(lit(1))).hint("skew_agg")))
    assertLocal(run(s =>
      dimWithDuplicates(s).where(col("k") < 500)
        .join(fact(s, skewed = true), Seq("k"), "right_outer")
        .groupBy("k", "attr").agg(sum("v"), count(lit(1))).hint("skew_agg")))
    assertLocal(
      run(s =>
        fact(s, skewed = true).join(dim(s).where(col("k") < 500), Seq("k"), "left_semi").groupBy(
          "k").agg(sum("v")).hint("skew_agg")))
    assertLocal(
      run(s =>
        fact(s, skewed = true).join(dim(s).where(col("k") < 500), Seq("k"), "left_anti").groupBy(
          "k").agg(sum("v")).hint("skew_agg")))
  }

  test("SQL hint with HAVING and a non-equi join condition") {
    fact(spark, skewed = true).createOrReplaceTempView("fact_t")
    dimWithDuplicates(spark).createOrReplaceTempView("dim_t")
    assertLocal(run(s =>
      s.sql(
        """SELECT /*+ SKEW_AGG(k) */ f.k, d.attr, sum(f.v) AS s, count(*) AS n
        |FROM fact_t f JOIN dim_t d ON f.k = d.k AND f.i <= d.attr
        |GROUP BY f.k, d.attr HAVING count(*) > 2""".stripMargin)))
  }

  private def metric(op: FlushingPartialAggregateExec, name: String): Long = op.metrics(name).value

  test("without the hint: a flushing local aggregate, for every family it takes") {
    // A map of 64 keys: batches of uniform keys reduce too little, so the hot key stays in the
    // map and the other rows pass through; every path of the operator runs.
    val d = differential(
      s =>
        narrowFact(s).join(dimWithDuplicates(s), "k").groupBy("k")
          .agg(
            sum("v"),
            count(lit(1)),
            count("v"),
            avg("d"),
            min("i"),
            max("i"),
            stddev("v"),
            variance("d"),
            bool_and(col("i") > 2),
            bool_or(col("i") > 5),
            sum("d"),
            approx_count_distinct("i"),
            first("i"),
            expr("sum(v) FILTER (WHERE i > 3)")),
      conf :+ (SkewAggConf.LOCAL_AGGREGATE_CAPACITY.key -> "64"): _*)
    assertLocal(d)
    for (adaptive <- Seq(false, true)) {
      val Seq(op) = flushing(d, adaptive)
      assert(metric(op, "numFlushes") > 0 && metric(op, "numPassedThrough") > 0)
      // 30% of the rows are key 0: they collapse to a few partial rows.
      assert(
        metric(op, "numOutputRows") < metric(op, "numInputRows") * 0.8,
        s"${metric(op, "numOutputRows")} of ${metric(op, "numInputRows")}")
    }
  }

  test("without the hint: declarative functions pass rows through in one projection") {
    for (ansi <- Seq("false", "true")) {
      val d = differential(
        s =>
          narrowFact(s).join(dimWithDuplicates(s), "k")
            .groupBy("k", "attr")
            .agg(
              sum("v"),
              sum("d"),
              avg("d"),
              count(lit(1)),
              min("v"),
              max("d"),
              stddev("v"),
              bool_and(col("i") > 2),
              expr("avg(d) FILTER (WHERE i > 3)"),
              expr("count(*) FILTER (WHERE v > 10)")),
        conf ++ Seq(
          SkewAggConf.LOCAL_AGGREGATE_CAPACITY.key -> "64",
          "spark.sql.ansi.enabled" -> ansi): _*)
      assertLocal(d)
      val Seq(op) = flushing(d, adaptive = true)
      assert(metric(op, "numPassedThrough") > 0)
    }
  }

  test("without the hint: heavy keys of one integral column compared by value, a null one too") {
    // Two heavy keys, 5 and null (20% of the rows each), the rest uniform: both stay in the map
    // and the other rows pass through; int and date keys take the by-value path.
    val keyed = (s: SparkSession) =>
      s.range(0, 20000).select(
        when(col("id") % 5 === 0, lit(5)).when(col("id") % 5 === 1, lit(null))
          .otherwise((col("id") * 7919) % Keys).cast("int").as("k"),
        (col("id") / 7.0).as("v"),
        (col("id") % 7).cast("int").as("i"))
    val other = (s: SparkSession) =>
      s.range(0, Keys).select(col("id").cast("int").as("k"))
        .union(s.range(0, 1).select(lit(null).cast("int").as("k")))
    val queries: Seq[SparkSession => DataFrame] = Seq(
      s =>
        keyed(s).join(other(s), Seq("k"), "left").groupBy("k")
          .agg(sum("v"), count(lit(1)), max("i")),
      s =>
        keyed(s).withColumn("k", date_add(lit("2026-01-01").cast("date"), col("k")))
          .join(
            other(s).withColumn("k", date_add(lit("2026-01-01").cast("date"), col("k"))),
            Seq("k"),
            "left")
          .groupBy("k").agg(sum("v"), min("i")))
    for (query <- queries) {
      val d = differential(query, conf :+ (SkewAggConf.LOCAL_AGGREGATE_CAPACITY.key -> "64"): _*)
      assertLocal(d)
      for (adaptive <- Seq(false, true)) {
        val Seq(op) = flushing(d, adaptive)
        assert(metric(op, "numPassedThrough") > 0)
        // 40% of the rows are on the two heavy keys: they collapse to a few partial rows.
        assert(
          metric(op, "numOutputRows") < metric(op, "numInputRows") * 0.7,
          s"${metric(op, "numOutputRows")} of ${metric(op, "numInputRows")}")
      }
    }
  }

  test("without the hint, default capacity: the same results, the hot key merged") {
    val d = run(s =>
      fact(s, skewed = true).join(dim(s), "k").groupBy("k", "attr")
        .agg(sum("v"), avg("i"), max("d")))
    assertLocal(d)
    val Seq(op) = flushing(d, adaptive = true)
    assert(metric(op, "numOutputRows") < metric(op, "numInputRows"))
  }

  /** Aggregates merging partial rows (PartialMerge) right above an exchange, below a join. */
  private def mergesAfterJoinShuffle(plan: SparkPlan): Boolean = nodes[ShuffledJoin](plan).exists(
    _.children.exists(c =>
      find(c) {
        case a: BaseAggregateExec => a.aggregateExpressions.forall(_.mode == PartialMerge) &&
          a.requiredChildDistributionExpressions.exists(_.nonEmpty) &&
          find(a.child)(_.isInstanceOf[ShuffleExchangeLike]).isDefined
        case _ => false
      }.isDefined))

  test("before a shuffled join, partial rows merge after the join's own shuffle: no extra one") {
    for ((preferSortMerge, hint) <- Seq(("true", "no_hint"), ("false", "skew_agg"))) {
      val d = differential(
        s =>
          narrowFact(s).join(dimWithDuplicates(s), "k")
            .groupBy("k", "attr").agg(sum("v"), avg("d"), count(lit(1)), max("i")).hint(hint),
        conf ++ Seq(
          "spark.sql.join.preferSortMergeJoin" -> preferSortMerge,
          "spark.sql.shuffle.partitions" -> "7",
          SkewAggConf.LOCAL_AGGREGATE_MIN_MERGE_REDUCTION.key -> "1.0"): _*)
      assertLocal(d)
      for (adaptive <- Seq(false, true)) {
        val (off, on) = (d.plan(false, adaptive), d.plan(true, adaptive))
        assert(mergesAfterJoinShuffle(on), on)
        assert(nodes[ShuffleExchangeLike](on).size == nodes[ShuffleExchangeLike](off).size, on)
      }
    }
    // DISTINCT-only: Spark deduplicates again above the join, so no merge below it.
    val d = run(s =>
      fact(s, skewed = true).join(dimWithDuplicates(s), "k").groupBy("k")
        .agg(countDistinct("i")))
    assertLocal(d)
    assert(!mergesAfterJoinShuffle(d.plan(on = true, adaptive = true)))
  }

  /** The local stage markers of `plan`, through its query stages. */
  private def localStages(plan: SparkPlan): Seq[SkewAggLocalStageExec] =
    nodes[SkewAggLocalStageExec](plan)

  /**
   * `(k, i)`: 500 rows over dim's even keys, fewer bytes than dim: dim, aggregated before a join
   * with it, is not refused as the smaller side.
   */
  private def fewRows(s: SparkSession): DataFrame =
    s.range(0, 500, 1, 4).select((col("id") * 2).as("k"), (col("id") % 5).cast("int").as("i"))

  test("unique keys on the aggregated side: the merge after the join's shuffle is dropped") {
    // dim's keys are unique: its local aggregate emits one row per key, nothing to merge.
    val d = run(s =>
      fewRows(s).join(dim(s), "k").groupBy("i")
        .agg(sum("attr"), count(lit(1))))
    assertLocal(d)
    assert(mergesAfterJoinShuffle(d.plan(on = true, adaptive = false)))
    val adaptive = d.plan(on = true, adaptive = true)
    assert(!mergesAfterJoinShuffle(adaptive), adaptive)
    val Seq(decision) = localStages(adaptive).map(_.decision)
    assert(
      decision.matches("flushing partial aggregate before the join; not merged after the " +
        "join's shuffle: 1,000 partial rows of about [0-9,]+ keys \\([0-9]\\.[0-9]+ per key\\), " +
        "below spark.skewagg.localAggregate.minMergeReduction=3.0"),
      decision)
    assert(SkewAggExplain.explain(adaptive).contains(decision))
  }

  test("left alone before a join adaptive execution broadcasts, whatever its stage's size") {
    // TPC-H Q2's subquery: the side joined is a few rows, broadcast; its broadcast stage reports
    // its hashed relation's memory, a whole page, which passed for a side too large to broadcast
    // when adaptive execution re-planned the join: a local aggregate and a shuffle of its own.
    val d = differential(
      s =>
        fact(s, skewed = true).join(dim(s).where(col("k") < 5), "k").groupBy("k")
          .agg(min("v"), count("*")),
      conf :+ (SQLConf.AUTO_BROADCASTJOIN_THRESHOLD.key -> "100k"): _*)
    for (adaptive <- Seq(false, true)) {
      val plan = d.plan(on = true, adaptive)
      assert(localStages(plan).isEmpty && nodes[BroadcastHashJoinExec](plan).nonEmpty, plan)
    }
    val adaptive = d.plan(on = true, adaptive = true)
    // The stage is larger than the threshold by its size: only its being a broadcast tells.
    val broadcastSizes = nodes[BroadcastExchangeExec](adaptive).map(_.metrics("dataSize").value)
    assert(broadcastSizes.nonEmpty && broadcastSizes.forall(_ > 100 * 1024), broadcastSizes)
    // Recorded when planned (adaptive execution keeps that plan when re-planning changes none).
    for (adaptive <- Seq(false, true)) {
      val text = SkewAggExplain.explain(d.plan(on = true, adaptive))
      assert(
        text.contains("left alone: Spark broadcasts a side of the join (estimated at ") &&
          text.contains("at most spark.sql.autoBroadcastJoinThreshold=100.0 KiB), so the " +
            "aggregated side is not shuffled for it: a local aggregate before the join would " +
            "only add work."),
        text)
    }
  }

  test("left alone without the hint where Spark knows the side is unique on the join key") {
    // Grouped on k already: its distinct keys say so.
    val grouped = run(s =>
      fact(s, skewed = true).join(
        dim(s).groupBy("k").agg(max("attr").as("attr")),
        "k").groupBy("i").agg(sum("attr")))
    // (Spark's own partial aggregate of the grouped side stands below the join: no marker.)
    for (adaptive <- Seq(false, true)) {
      val plan = grouped.plan(on = true, adaptive)
      assert(localStages(plan).isEmpty, plan)
    }
    assert(SkewAggExplain.explain(grouped.plan(on = true, adaptive = true)).contains(
      "left alone: the joined side is already unique on k"))
    // Column statistics of an analyzed table, read with the cost-based optimizer.
    spark.sql("DROP TABLE IF EXISTS unique_dim")
    dim(spark).write.saveAsTable("unique_dim")
    try {
      spark.sql("ANALYZE TABLE unique_dim COMPUTE STATISTICS FOR COLUMNS k")
      val analyzed = differential(
        s =>
          fact(s, skewed = true).join(s.table("unique_dim"), "k")
            .groupBy("i").agg(sum("attr")),
        conf :+ ("spark.sql.cbo.enabled" -> "true"): _*)
      assertNotLocal(analyzed)
      val text = SkewAggExplain.explain(analyzed.plan(on = true, adaptive = false))
      assert(
        text.contains("left alone: column statistics give k 1,000 distinct values in " +
          "1,000 rows of the joined side"),
        text)
      // The hint asks for the rewrite whatever the statistics say.
      assertLocal(differential(
        s =>
          fact(s, skewed = true).join(s.table("unique_dim"), "k")
            .groupBy("i").agg(sum("attr")).hint("skew_agg"),
        conf :+ ("spark.sql.cbo.enabled" -> "true"): _*))
    } finally spark.sql("DROP TABLE IF EXISTS unique_dim")
  }

  test("the smaller side of a join: left alone without column statistics, and why") {
    // dim is the one side of a one-to-many join with fact: unique on k, nothing to merge.
    val query = (s: SparkSession) =>
      fact(s, skewed = true).join(dim(s), "k").groupBy("i")
        .agg(sum("attr"), count(lit(1)))
    assertNotLocal(run(query))
    val text = SkewAggExplain.explain(run(query).plan(on = true, adaptive = true))
    assert(
      text.contains("left alone: the joined side reads ") &&
        text.contains(" of tables, at most half the other side's "),
      text)
    assertLocal(run(s => query(s).hint("skew_agg")))
    // Grouped by the join key (and fact's v, to reach the skew floor's bytes), the skewed join
    // partition below it is still split at run time.
    val byKey =
      run(s => fact(s, skewed = true).join(dim(s), "k").groupBy("k", "v").agg(sum("attr")))
    assertNotLocal(byKey)
    val split = SkewAggExplain.explain(byKey.plan(on = true, adaptive = true))
    assert(split.contains("rewritten: skew split of the join below the aggregate"), split)
    // Column statistics that show the smaller side's keys repeated (40 rows per key).
    spark.sql("DROP TABLE IF EXISTS repeating_side")
    spark.range(0, 4000).select((col("id") % 100).as("k"), (col("id") % 10).as("attr"))
      .write.saveAsTable("repeating_side")
    try {
      val repeating = (s: SparkSession) =>
        fact(s, skewed = true).join(s.table("repeating_side"), "k").groupBy("i")
          .agg(sum("attr"))
      assertNotLocal(run(repeating))
      spark.sql("ANALYZE TABLE repeating_side COMPUTE STATISTICS FOR COLUMNS k")
      assertLocal(differential(repeating, conf :+ ("spark.sql.cbo.enabled" -> "true"): _*))
    } finally spark.sql("DROP TABLE IF EXISTS repeating_side")
  }

  test("a join on the other side: the sides compared by the tables they read") {
    // Spark estimates dim joined to a small table as the product of the two, more than fact; the
    // tables it reads are smaller than fact, which is aggregated before the join (TPC-H Q3).
    val small = (s: SparkSession) => s.range(0, 10).select(col("id").as("attr"), col("id").as("w"))
    assertLocal(run(s =>
      fact(s, skewed = true).join(dim(s).join(small(s), "attr"), "k").groupBy("k", "w")
        .agg(sum("v"))))
  }

  test("a side small at run time: the join below the local aggregate broadcast, as vanilla's") {
    // Planned without broadcasts (the static threshold off); at run time dim's 50 rows fit the
    // adaptive threshold, and vanilla's adaptive execution broadcasts them.
    val small = conf :+ (SQLConf.ADAPTIVE_AUTO_BROADCASTJOIN_THRESHOLD.key -> "100k")
    val query = (s: SparkSession) =>
      fact(s, skewed = true).join(dim(s).where(col("k") < 50), "k").groupBy("attr").agg(sum("v"))
    val d = differential(query, small: _*)
    assertLocal(d)
    for (on <- Seq(false, true)) {
      assert(nodes[BroadcastHashJoinExec](d.plan(on, adaptive = true)).nonEmpty, d.plan(on, true))
    }
    assert(nodes[BroadcastHashJoinExec](d.plan(on = true, adaptive = false)).isEmpty)
    val text = SkewAggExplain.explain(d.plan(on = true, adaptive = true))
    assert(text.contains("the join broadcast at run time: its right side's stage holds "), text)
    // A join strategy hint keeps the join as planned; so does a threshold of -1.
    val hinted = differential(
      s =>
        fact(s, skewed = true).join(dim(s).where(col("k") < 50).hint("merge"), "k")
          .groupBy("attr").agg(sum("v")),
      small: _*)
    assert(nodes[BroadcastHashJoinExec](hinted.plan(on = true, adaptive = true)).isEmpty)
    val off =
      differential(query, conf :+ (SQLConf.ADAPTIVE_AUTO_BROADCASTJOIN_THRESHOLD.key -> "-1"): _*)
    assert(nodes[BroadcastHashJoinExec](off.plan(on = true, adaptive = true)).isEmpty)
  }

  test("TPC-H Q12's shape: a side already shuffled for the join is not aggregated and shuffled " +
    "again when adaptive execution re-plans the join") {
    // dim (the orders) is refused as the one side of a one-to-many join. Its small stage runs
    // before fact's, and adaptive execution re-plans the join; fact's side, filtered to 70 rows,
    // is broadcast at run time. A local aggregate of dim planned then would read dim's shuffled
    // stage and shuffle it again.
    val small = conf :+ (SQLConf.ADAPTIVE_AUTO_BROADCASTJOIN_THRESHOLD.key -> "100k")
    val d = differential(
      s =>
        dim(s).join(fact(s, skewed = true, rows = 2000000).where(col("v") < 10), "k")
          .groupBy("i").agg(sum("attr"), count(lit(1))),
      small: _*)
    assertNotLocal(d)
    val plan = d.plan(on = true, adaptive = true)
    // The exchanges below the join that read dim's rows.
    val overDim = nodes[ShuffleExchangeLike](plan).count(e =>
      nodes[BaseJoinExec](e).isEmpty &&
        nodes[RangeExec](e).exists(_.range.numElements == Keys))
    assert(overDim == 1, plan)
    val text = SkewAggExplain.explain(plan)
    assert(!text.contains("rewritten: flushing") && text.contains("left alone: the joined"), text)
  }

  test("keys repeated across tasks: the merge after the join's shuffle stays, and says why") {
    // Each of 8 tasks holds every key once: no task reduces anything, the merge 8 rows to one.
    val d = run(s =>
      s.range(0, 8000, 1, 8).select((col("id") % 1000).as("k"), col("id").as("v"))
        .join(dim(s), "k").groupBy("attr").agg(sum("v")))
    assertLocal(d)
    val adaptive = d.plan(on = true, adaptive = true)
    assert(mergesAfterJoinShuffle(adaptive), adaptive)
    val Seq(decision) = localStages(adaptive).map(_.decision)
    assert(
      decision.contains("; merged after the join's shuffle: 8,000 partial rows of about"),
      decision)
    val Seq(op) = flushing(d, adaptive = true)
    assert(metric(op, "numOutputRows") == metric(op, "numInputRows"))
  }

  test("minMergeReduction=1.0 always merges; the sketch only where a merge follows") {
    val d = differential(
      s => fewRows(s).join(dim(s), "k").groupBy("i").agg(sum("attr")),
      conf :+ (SkewAggConf.LOCAL_AGGREGATE_MIN_MERGE_REDUCTION.key -> "1.0"): _*)
    assert(mergesAfterJoinShuffle(d.plan(on = true, adaptive = true)))
    // DISTINCT-only: no merge follows (Spark deduplicates above the join), so no sketch of the
    // keys even at 1.0; the flushing aggregate is planned all the same.
    val distinctOnly = differential(
      s => fact(s, skewed = true).join(dim(s), "k").groupBy("k").agg(countDistinct("i")),
      conf :+ (SkewAggConf.LOCAL_AGGREGATE_MIN_MERGE_REDUCTION.key -> "1.0"): _*)
    val planned = flushing(distinctOnly, adaptive = true)
    assert(planned.nonEmpty, distinctOnly.plan(on = true, adaptive = true))
    assert(planned.forall(_.emittedKeys.isEmpty))
  }

  /**
   * A PartialMerge aggregate right above the join, requiring no distribution: the join's rows
   * merged where they are before Spark shuffles them to the final aggregate.
   */
  private def mergesAboveJoin(plan: SparkPlan): Boolean = nodes[BaseAggregateExec](plan).exists {
    a =>
      a.aggregateExpressions.nonEmpty && a.aggregateExpressions.forall(_.mode == PartialMerge) &&
      a.requiredChildDistributionExpressions.isEmpty &&
      find(a.child)(_.isInstanceOf[ShuffledJoin]).isDefined
  }

  test("grouping by columns that do not hold the join key: the join's rows merge before the " +
    "shuffle to the final aggregate, as Spark's partial aggregate would") {
    for (hint <- Seq("skew_agg", "no_hint")) {
      val byOther = run(s =>
        narrowFact(s).join(dimWithDuplicates(s), "k")
          .groupBy("attr").agg(sum("v"), avg("d"), count(lit(1))).hint(hint))
      assertLocal(byOther)
      for (adaptive <- Seq(false, true)) {
        val on = byOther.plan(on = true, adaptive)
        assert(mergesAboveJoin(on), on)
      }
      // Grouped by the join key, the join's rows arrive clustered: no merge, no exchange added.
      val byKey = run(s =>
        fact(s, skewed = true).join(dimWithDuplicates(s), "k")
          .groupBy("k", "attr").agg(sum("v")).hint(hint))
      for (adaptive <- Seq(false, true)) {
        val (off, on) = (byKey.plan(false, adaptive), byKey.plan(true, adaptive))
        assert(!mergesAboveJoin(on), on)
        assert(nodes[ShuffleExchangeLike](on).size == nodes[ShuffleExchangeLike](off).size, on)
      }
    }
  }

  test("join keys computed from columns: no merge after the shuffle, still exact") {
    val d = run(s =>
      fact(s, skewed = true).join(
        dimWithDuplicates(s).withColumnRenamed("k", "dk"),
        col("k") + 1 === col("dk") + 1).groupBy("k").agg(sum("v")).hint("skew_agg"))
    assertLocal(d)
    assert(!mergesAfterJoinShuffle(d.plan(on = true, adaptive = true)))
  }

  test("DISTINCT-only aggregates: the aggregated side deduplicated before the join") {
    for (hint <- Seq("skew_agg", "no_hint")) {
      val d = run(s =>
        fact(s, skewed = true).join(dimWithDuplicates(s), "k").groupBy("k", "attr")
          .agg(countDistinct("i"), sum_distinct(col("i")), expr("avg(DISTINCT i)")).hint(hint))
      assertLocal(d)
      assert(flushing(d, adaptive = true).nonEmpty == (hint != "skew_agg"))
    }
  }

  test("left alone: DISTINCTs of several column sets (Spark's optimizer expands them first)") {
    // RewriteDistinctAggregates turns them into aggregates over an Expand before planning,
    // where this rule runs (docs/rewrites.md).
    assertNotLocal(run(s =>
      fact(s, skewed = true).join(dimWithDuplicates(s), "k")
        .groupBy("k", "attr").agg(countDistinct("i"), sum_distinct(col("d"))).hint("skew_agg")))
  }

  /**
   * The flushing deduplications (adaptive execution off, then on) of `countDistinct(x)` by `k`
   * over `rows` joined on `k`, with a map of 4096 keys: rewritten, judged by the join key.
   */
  private def distinctAfterJoin(
      rows: SparkSession => DataFrame): Seq[FlushingPartialAggregateExec] = {
    val d = differential(
      s =>
        rows(s)
          .join(s.range(0, 200001).select(col("id").as("k"), (col("id") % 10).as("attr")), "k")
          .groupBy("k").agg(countDistinct("x")),
      conf :+ (SkewAggConf.LOCAL_AGGREGATE_CAPACITY.key -> "4096"): _*)
    assertLocal(d)
    for (adaptive <- Seq(false, true)) yield {
      val Seq(op) = flushing(d, adaptive)
      assert(op.simpleString(10).contains("heavy by [k]"), op.simpleString(10))
      op
    }
  }

  test("without the hint, DISTINCT: a hot join key spread over many DISTINCT values is merged") {
    // The deduplication groups by (k, x) and the join shuffles on k: 30% of rows on k = 0,
    // spread over 300 values of x, the others unique. No (0, x) is heavy alone in a 4096-key
    // batch; k = 0 is, so the (0, x) stay in the map.
    for (op <- distinctAfterJoin(hotKeySpreadOverX)) {
      // 140,000 unique rows pass through. Tried: 141,200 rows out; without judging by k, 198,660.
      assert(metric(op, "numOutputRows") < 160000, op.metrics)
      // The 300 (0, x) kept merge the hot key's rows that follow: they stay.
      assert(metric(op, "numKeptKeysDropped") == 0, op.metrics)
    }
  }

  test("without the hint, DISTINCT: a hot join key over more values than a batch sees passes") {
    // 30% of rows on k = 0, each with a value of x of its own: k = 0 is heavy in every batch, so
    // its (0, x) are kept, but none is seen again. Their trial drops them, and rows pass through
    // without a probe.
    val ops = distinctAfterJoin(
      _.range(0, 200000, 1, 1).select(
        when(col("id") % 10 < 3, lit(0L)).otherwise(col("id") + 1).as("k"),
        col("id").as("x")))
    for (op <- ops) {
      assert(metric(op, "numKeptKeysDropped") > 0, op.metrics)
      // Nothing merges: each row is emitted once, and no kept key's empty place with it.
      assert(metric(op, "numOutputRows") == 200000, op.metrics)
    }
  }

  test("left alone: aggregates reading both sides, full outer joins, NO_SKEW_AGG") {
    assertNotLocal(run(s =>
      fact(s, skewed = true).join(dim(s), "k").groupBy("k")
        .agg(sum(col("v") + col("attr"))).hint("skew_agg")))
    assertNotLocal(run(s =>
      fact(s, skewed = true).join(dim(s), Seq("k"), "full_outer")
        .groupBy("k").agg(sum("v")).hint("skew_agg")))
    assertNotLocal(run(s =>
      dim(s).join(fact(s, skewed = true), Seq("k"), "left_outer")
        .groupBy("k").agg(sum("v")).hint("skew_agg")))
    assertNotLocal(run(s =>
      fact(s, skewed = true).join(dim(s), "k").groupBy("k").agg(sum("v"))
        .hint("no_skew_agg")))
    // DISTINCT mixed with other aggregates: deduplication would change the others.
    assertNotLocal(run(s =>
      fact(s, skewed = true).join(dim(s), "k").groupBy("k")
        .agg(countDistinct("i"), sum("v")).hint("skew_agg")))
  }

  test("left alone without the hint: partial buffers with decimals of more than 18 digits") {
    // sum and avg of a decimal(12, 2) keep a decimal(22, 2) sum: bytes, a BigDecimal per row.
    for (f <- Seq(sum("d"), avg("d"), sum(col("d") * (lit(1) - col("d") / 100)))) {
      val d = run(s => fact(s, skewed = true).join(dim(s), "k").groupBy("attr").agg(f, sum("v")))
      assertNotLocal(d)
      val text = SkewAggExplain.explain(d.plan(on = true, adaptive = false))
      assert(
        text.contains("left alone: the partial buffers of") &&
          text.contains("hold decimals of more than 18 digits"),
        text)
      // Adaptive execution splits the hot key's join partition instead.
      val adaptive = SkewAggExplain.explain(d.plan(on = true, adaptive = true))
      assert(adaptive.contains("rewritten: skew split of the join below the aggregate"), adaptive)
      // The hint aggregates anyway.
      assertLocal(run(s =>
        fact(s, skewed = true).join(dim(s), "k").groupBy("attr")
          .agg(f, sum("v")).hint("skew_agg")))
    }
  }

  /**
   * `(k, l)`, `l` a BIGINT: 30% of rows on key 0, the rest uniform over the keys, and two rows on
   * `key` whose `l` is the largest BIGINT: the sum of that group overflows.
   */
  private def overflowingFact(s: SparkSession, key: Long): DataFrame = {
    val extra = col("id") >= 20000
    s.range(0, 20002).select(
      when(extra, lit(key)).when(col("id") % 10 < 3, lit(0L)).otherwise(col("id") % Keys).as("k"),
      when(extra, lit(Long.MaxValue)).otherwise(col("id") % 7).as("l"))
  }

  private val ansi = conf :+ (SQLConf.ANSI_ENABLED.key -> "true")

  test("ANSI sums of integers: a group the join drops never fails the query (fuzz seed 5, " +
    "case 293)") {
    // Key -1 has no row in dim: the inner join drops it. Key 7 has one: the anti join drops it.
    for (forced <- Seq(true, false)) {
      def hinted(df: DataFrame) = if (forced) df.hint("skew_agg") else df
      assertLocal(differential(
        s =>
          hinted(overflowingFact(s, -1).join(dim(s), "k")
            .groupBy("k").agg(sum("l"), sum(when(col("l") > 0, lit(1))), avg("l"))),
        ansi: _*))
      assertLocal(differential(
        s =>
          hinted(overflowingFact(s, 7)
            .join(dim(s), Seq("k"), "left_anti").groupBy("k").agg(sum("l"))),
        ansi: _*))
    }
  }

  test("ANSI sums of integers: a group the join keeps fails on overflow as Spark's does") {
    for (on <- Seq(false, true); adaptive <- Seq(false, true)) {
      withSQLConf(ansi ++ Seq(
        SkewAggConf.ENABLED.key -> on.toString,
        SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> adaptive.toString): _*) {
        val df = overflowingFact(spark, 7).join(dim(spark), "k").groupBy("k").agg(sum("l"))
          .hint("skew_agg")
        val e = intercept[Exception](df.collect())
        assert(
          Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null)
            .exists(_.getMessage.contains("ARITHMETIC_OVERFLOW")),
          e)
        if (!adaptive) assert(aggregatesBeforeJoin(df.queryExecution.executedPlan) == on)
      }
    }
  }

  test("left alone before a join that may drop rows: aggregates that may fail on a row") {
    val fails = udf((v: Double) => if (v > 1e9) throw new IllegalStateException("big") else v)
    // Built where the query is (under `ansi`): a cast takes the session's ANSI mode when it is
    // made, and Spark 3.5's default is not ANSI.
    for ((f, hint) <- Seq[(() => Column, String)](
        (() => sum(make_dt_interval(col("i")))) -> "skew_agg",
        (() => sum(col("d").cast("int"))) -> "skew_agg",
        (() => sum(col("v") / (col("i") + 1))) -> "skew_agg",
        (() => sum(fails(col("v")))) -> "none")) {
      val d = differential(
        s =>
          fact(s, skewed = true).join(dim(s), "k").groupBy("k")
            .agg(f(), sum("v")).hint(hint),
        ansi: _*)
      assertNotLocal(d)
      val text = SkewAggExplain.explain(d.plan(on = true, adaptive = false))
      assert(text.contains("may fail on some rows, and aggregating before the join"), text)
      // A join that keeps every row of the aggregated side: aggregated before it.
      assertLocal(differential(
        s =>
          fact(s, skewed = true).join(dim(s), Seq("k"), "left_outer")
            .groupBy("k").agg(f(), sum("v")).hint("skew_agg"),
        ansi: _*))
    }
    // With the hint, the user's own functions are trusted; what cannot fail is taken either way.
    assertLocal(differential(
      s =>
        fact(s, skewed = true).join(dim(s), "k").groupBy("k")
          .agg(sum(fails(col("v")))).hint("skew_agg"),
      ansi: _*))
    assertLocal(differential(
      s =>
        fact(s, skewed = true).join(dim(s), "k").groupBy("k")
          .agg(
            sum(col("v") * (lit(1) - col("i") / 100)),
            sum(col("i").cast("bigint")),
            max(when(col("i") > 3, col("v")))),
      ansi: _*))
  }

  test("left alone without the hint: holistic aggregates, joins Spark may broadcast") {
    assertNotLocal(run(s =>
      fact(s, skewed = true).join(dim(s), "k").groupBy("k")
        .agg(sum("v"), size(collect_list("i")))))
    assertNotLocal(differential(
      s =>
        fact(s, skewed = true).join(dim(s), "k").groupBy("k")
          .agg(sum("v")),
      conf.filterNot(_._1 == "spark.sql.autoBroadcastJoinThreshold"): _*))
    assertNotLocal(run(s =>
      fact(s, skewed = true).join(broadcast(dim(s)), "k").groupBy("k")
        .agg(sum("v"))))
  }

  test("grouping by floating-point keys: -0.0 and 0.0, NaNs group together (found by fuzzing)") {
    for (hint <- Seq("skew_agg", "no_hint")) {
      val d = run(s =>
        fact(s, skewed = true).join(
          dim(s).select(
            col("k"),
            when(col("k") % 3 === 0, lit(-0.0)).when(col("k") % 3 === 1, lit(0.0))
              .otherwise(lit(Double.NaN)).as("z")),
          "k")
          .groupBy("z").agg(sum("v"), count(lit(1))).hint(hint))
      assertLocal(d)
      assert(d.rows.size == 2, d.rows)
    }
  }

  test(
    "SQL hints reach the aggregate, though Spark's analysis rebuilds it (aliases, HAVING)",
    EveryBuild) {
    fact(spark, skewed = true).createOrReplaceTempView("fact_h")
    for ((sql, force) <- Seq(
        "SELECT /*+ NO_SKEW_AGG */ k, sum(v) FROM fact_h GROUP BY k" -> false,
        "SELECT /*+ SKEW_AGG */ k, sum(v) FROM fact_h GROUP BY k HAVING count(*) > 1" -> true,
        "SELECT /*+ SKEW_AGG(k) */ k, sum(v) AS s FROM fact_h GROUP BY k ORDER BY s" -> true)) {
      val aggregates = spark.sql(sql).queryExecution.analyzed.collect { case a: Aggregate => a }
      assert(aggregates.flatMap(a => SkewAggHints.of(a)).map(_.force) == Seq(force), sql)
    }
  }

  /** An aggregate over a join with `hint`, as SQL. */
  private def hintedAggregate(hint: String): String = {
    fact(spark, skewed = true).createOrReplaceTempView("fact_p")
    dim(spark).createOrReplaceTempView("dim_p")
    s"SELECT /*+ $hint */ f.k, sum(f.v) AS s, count(*) AS n " +
      "FROM fact_p f JOIN dim_p d ON f.k = d.k GROUP BY f.k"
  }

  /** Queries over [[hintedAggregate]] that the optimizer rewrites around it. */
  private def optimizedShapes(hint: String): Seq[String] = {
    val aggregate = hintedAggregate(hint)
    Seq(
      s"SELECT k, s FROM ($aggregate)", // an output pruned
      s"SELECT k, s * 2 AS s2, n + 1 AS n1 FROM ($aggregate)", // a projection merged
      s"SELECT k, s FROM ($aggregate) WHERE n > 2 AND k > 1", // filters pushed
      aggregate + " HAVING count(*) > 2 ORDER BY s")
  }

  // Each line's optimizer: on every build. What the rule then does with the hint it reads is the
  // same code on every line (the next test).
  test(
    "hints stay on through the optimizer: outputs pruned, projections merged, HAVING",
    EveryBuild) {
    for (hint <- Seq("SKEW_AGG", "NO_SKEW_AGG"); sql <- optimizedShapes(hint)) {
      val optimized = spark.sql(sql).queryExecution.optimizedPlan
      val hints = optimized.collect { case a: Aggregate => SkewAggHints.of(a).map(_.name) }
      assert(hints == Seq(Some(hint)), s"$sql\n$optimized")
    }
  }

  test("NO_SKEW_AGG leaves the aggregate alone whatever the optimizer made of it") {
    // Unhinted, the aggregate is rewritten.
    assertLocal(run(s => s.sql(hintedAggregate("no_hint"))))
    optimizedShapes("NO_SKEW_AGG").foreach(sql => assertNotLocal(run(s => s.sql(sql))))
  }

  test("a DataFrame's hint is on that DataFrame, not on the one it was built on", EveryBuild) {
    withSQLConf(conf: _*) {
      val shared = fact(spark, skewed = true).join(dim(spark), "k").groupBy("k")
        .agg(sum("v").as("s"), count(lit(1)).as("n"))
      val hinted = shared.hint("no_skew_agg").select("k", "s")
      hinted.collect()
      shared.collect()
      assert(!aggregatesBeforeJoin(hinted.queryExecution.executedPlan))
      assert(aggregatesBeforeJoin(shared.queryExecution.executedPlan))
    }
  }

  test("a hint naming a column that does not exist is a clear analysis error") {
    val e = intercept[AnalysisException](fact(spark, skewed = true).groupBy("k").agg(sum("v"))
      .hint("skew_agg", "nope").queryExecution.assertAnalyzed())
    assert(e.getMessage.contains("SKEW_AGG hint names column `nope`"), e.getMessage)
    assert(e.getMessage.contains("Available columns: k, v, i, d"), e.getMessage)
  }

  test("a hint on a query without an aggregate is a clear analysis error") {
    fact(spark, skewed = true).createOrReplaceTempView("fact_t")
    val e =
      intercept[AnalysisException](spark.sql("SELECT /*+ SKEW_AGG */ * FROM fact_t").collect())
    assert(e.getMessage.contains("SKEW_AGG hint must be placed on an aggregate"), e.getMessage)
  }

  test("NO_SKEW_AGG keeps the repartition rewrite away from its aggregate") {
    val d = run(s =>
      fact(s, skewed = true).repartition(col("k")).groupBy("k").agg(sum("v"))
        .hint("no_skew_agg"))
    for (adaptive <- Seq(false, true)) {
      assert(shape(d.plan(on = true, adaptive)) == shape(d.plan(on = false, adaptive)))
    }
  }
}
