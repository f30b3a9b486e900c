package org.apache.spark.sql.skewagg.skewsplit

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.execution.{SparkPlan, UnionExec}
import org.apache.spark.sql.execution.joins.ShuffledJoin
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  Differential, EveryBuild, SkewAggConf, SkewAggLocalStageExec, SkewAggSuiteBase, SpreadOverBuilds
}
import org.apache.spark.sql.skewagg.explain.SkewAggExplain
import org.apache.spark.sql.skewagg.SkewTestData._

/**
 * DISTINCT aggregates over a hot key with many distinct values (issue 48): the first step of a
 * DISTINCT groups by the key and the value, so the split of a skewed join or repartition below it
 * spreads the hot key's values over tasks by a hash of (key, value), and the regrouping by the key
 * merges one row per task. The skew test counts such a shuffle in rows (GroupsBeyondShuffleKeys).
 */
class SplitDistinctValuesSuite extends SkewAggSuiteBase with SpreadOverBuilds {

  /**
   * `(k, i, j, v, d)` in 8 map tasks: with `skewed`, 30% of rows on key 0, the rest uniform over
   * the keys; `i` over 4,000 values (so key 0 holds about 4,000) and null in one row of 53, `j`
   * over 2,500 values, `v` a double, `d` a decimal.
   */
  private def manyValues(s: SparkSession, skewed: Boolean, rows: Int = 40000): DataFrame = {
    val uniformKey = (col("id") * 7919) % Keys
    s.range(0, rows, 1, 8).select(
      (if (skewed) when(col("id") % 10 < 3, lit(0L)).otherwise(uniformKey) else uniformKey)
        .as("k"),
      when(col("id") % 53 === 0, lit(null)).otherwise((col("id") * 31) % 4000).cast("int")
        .as("i"),
      ((col("id") * 17) % 2500).as("j"),
      (col("id") / 7.0).as("v"),
      (col("id") % 100).cast("decimal(12,2)").as("d"))
  }

  private val oneDistinct = Seq(
    "count(DISTINCT i)",
    "sum(DISTINCT i)",
    "avg(DISTINCT i)",
    "count(*)",
    "sum(v)")

  private val severalDistinct = Seq(
    "count(DISTINCT i)",
    "count(DISTINCT j)",
    "sum(DISTINCT d)",
    "count(DISTINCT i) FILTER (WHERE v > 1000)",
    "avg(DISTINCT j) FILTER (WHERE i > 10)",
    "sum(v)")

  /** [[oneDistinct]] after a join with the dimension (`join`) or after `repartition(k)`. */
  private def oneDistinctAfter(s: SparkSession, join: Boolean, skewed: Boolean): DataFrame = {
    val input = manyValues(s, skewed)
    aggregated(if (join) input.join(dim(s), "k") else input.repartition(col("k")), oneDistinct)
  }

  private def aggregated(df: DataFrame, aggregates: Seq[String]): DataFrame =
    df.groupBy("k").agg(expr(aggregates.head), aggregates.tail.map(expr): _*)

  private def skewJoins(d: Differential): Int =
    nodes[ShuffledJoin](d.plan(on = true, adaptive = true)).count(_.isSkewJoin)

  private def repartitionSplits(d: Differential): Int =
    nodes[SkewAggLocalStageExec](d.plan(on = true, adaptive = true))
      .count(_.rewrite.what.startsWith(SplitSkewedShuffleBelowAggregate.Rewrite))

  test("count, sum and avg of one DISTINCT after a join: split, values spread by (k, i)") {
    val d = differential(
      s => aggregated(manyValues(s, skewed = true).join(dim(s), "k"), oneDistinct),
      conf: _*)
    val plan = d.plan(on = true, adaptive = true)
    assert(skewJoins(d) >= 1, plan)
    assert(exchangesOn(plan, "k", "i").nonEmpty)
    assert(exchangesOn(d.plan(on = false, adaptive = true), "k", "i").isEmpty)
    // Apart: the pieces of the skewed partition through the exchange on (k, i), the join's
    // other tasks aggregating in place, in the other branch of a union.
    assert(apart(plan) == Seq(false, true), plan)
    // Measured in rows: the deduplication's rows, not their compressed bytes.
    val explained = SkewAggExplain.explain(plan)
    assert(
      explained.matches("(?s).*skew split of the join below the aggregate: partition \\d+ " +
        "is [\\d,]+ rows.*its pieces' groups of \\(k, i\\) are exchanged on all of them.*"),
      explained)
  }

  /**
   * The tasks each branch of a union keeps of a split read, whole partitions (false) or pieces
   * (true).
   */
  private def apart(plan: SparkPlan): Seq[Boolean] =
    nodes[UnionExec](plan).flatMap(_.children.map(branch =>
      nodes[SplitReadTasksExec](branch).map(_.pieces).distinct)).flatten

  // Both splits on every build, through each line's planning of a single DISTINCT (4.3 fuses
  // its regrouping); the tests of the other single-DISTINCT functions are spread.
  test(
    "countDistinct alone (Spark 4.3 fuses its regrouping): split after a join and after " +
      "repartition(k), values spread by (k, i)",
    EveryBuild) {
    for (join <- Seq(true, false)) {
      val d = differential(
        s => {
          val input = manyValues(s, skewed = true)
          (if (join) input.join(dim(s), "k") else input.repartition(col("k")))
            .groupBy("k").agg(countDistinct("i"))
        },
        conf: _*)
      val plan = d.plan(on = true, adaptive = true)
      assert((if (join) skewJoins(d) else repartitionSplits(d)) >= 1, plan)
      assert(exchangesOn(plan, "k", "i").nonEmpty, plan)
      assert(apart(plan) == Seq(false, true), plan)
    }
  }

  test(
    "Spark's coalescing on, 1800 shuffle partitions: the whole partitions' tasks coalesced " +
      "around the split, and the pieces' tasks, keep Spark's rows") {
    for (join <- Seq(true, false)) {
      val d = differential(
        s => oneDistinctAfter(s, join, skewed = true),
        conf ++ Seq(
          // Below 2000: above it, map outputs record one average block size unless
          // spark.shuffle.accurateBlockSkewedFactor is set at start (ManyShufflePartitionsSuite).
          SQLConf.SHUFFLE_PARTITIONS.key -> "1800",
          SQLConf.COALESCE_PARTITIONS_ENABLED.key -> "true"): _*)
      val plan = d.plan(on = true, adaptive = true)
      assert(apart(plan) == Seq(false, true), s"$plan\n${SkewAggExplain.explain(plan)}")
      // Spark coalesced the whole partitions' tasks (fewer than the partitions not split).
      val whole = nodes[SplitReadTasksExec](plan).filterNot(_.pieces)
      assert(whole.forall(_.outputPartitioning.numPartitions < 1799), plan)
    }
  }

  test("several DISTINCTs and FILTER clauses after a join: split, Spark's rows") {
    val d = differential(
      s => aggregated(manyValues(s, skewed = true).join(dim(s), "k"), severalDistinct),
      conf: _*)
    assert(skewJoins(d) >= 1, d.plan(on = true, adaptive = true))
  }

  test(
    "count, sum and avg of one DISTINCT after repartition(k): split reads, exchanges on " +
      "(k, i) and then on k") {
    val d = differential(
      s => aggregated(manyValues(s, skewed = true).repartition(col("k")), oneDistinct),
      conf: _*)
    val plan = d.plan(on = true, adaptive = true)
    assert(repartitionSplits(d) == 1, plan)
    assert(exchangesOn(plan, "k", "i").size == 1, plan)
    // The user's repartition (read by both branches), and the exchange of the regrouped partial
    // rows of the pieces.
    assert(exchangesOn(plan, "k").distinct.size == 2, plan)
    assert(apart(plan) == Seq(false, true), plan)
    val explained = SkewAggExplain.explain(plan)
    assert(
      explained.matches("(?s).*skewed repartition read in splits: partition \\d+ is " +
        "[\\d,]+ rows.*its pieces' groups of \\(k, i\\) are exchanged on all of them.*"),
      explained)
  }

  test("several DISTINCTs and FILTER clauses after repartition(k): Spark's rows; split reads " +
    "where the expanded rows are aggregated after the user's shuffle") {
    val query = (s: SparkSession) =>
      aggregated(manyValues(s, skewed = true).repartition(col("k")), severalDistinct)
    // By default the expanded rows are aggregated before the user's shuffle, and their merge
    // after it is a regular aggregate's final half: left unsplit (docs/rewrites.md).
    differential(query, conf: _*)
    val d = differential(
      query,
      conf :+ (SkewAggConf.REPARTITION_LOCAL_AGGREGATE_ENABLED.key -> "false"): _*)
    assert(repartitionSplits(d) == 1, d.plan(on = true, adaptive = true))
  }

  test("ANSI: a DISTINCT sum that overflows fails as Spark's does, split or not") {
    val query = (s: SparkSession) =>
      manyValues(s, skewed = true)
        .withColumn("big", (col("i") + 1).cast("long") * lit(Long.MaxValue / 2000))
        .join(dim(s), "k").groupBy("k").agg(sum_distinct(col("big")))
    for (join <- Seq(true, false); on <- Seq(false, true); adaptive <- Seq(false, true)) {
      withSQLConf(conf ++ Seq(
        SQLConf.ANSI_ENABLED.key -> "true",
        SkewAggConf.ENABLED.key -> on.toString,
        SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> adaptive.toString): _*) {
        val df = if (join) query(spark)
        else manyValues(spark, skewed = true)
          .withColumn("big", (col("i") + 1).cast("long") * lit(Long.MaxValue / 2000))
          .repartition(col("k")).groupBy("k").agg(sum_distinct(col("big")))
        val error = intercept[Exception](df.collect())
        val messages = Iterator.iterate[Throwable](error)(_.getCause).takeWhile(_ != null)
          .map(String.valueOf(_)).mkString("\n")
        assert(messages.contains("ARITHMETIC_OVERFLOW"), s"on=$on adaptive=$adaptive: $messages")
      }
    }
  }

  test("few values per key: the deduplication before the shuffle removes the skew, no split") {
    val d = differential(
      s => fact(s, skewed = true).join(dim(s), "k").groupBy("k").agg(countDistinct("i")),
      conf: _*)
    assert(skewJoins(d) == 0, d.plan(on = true, adaptive = true))
  }

  test("uniform data: Spark's plan") {
    for (join <- Seq(true, false)) {
      val d = differential(
        s => oneDistinctAfter(s, join, skewed = false),
        conf: _*)
      assert(skewJoins(d) == 0 && repartitionSplits(d) == 0, d.plan(on = true, adaptive = true))
      assert(exchangesOn(d.plan(on = true, adaptive = true), "k", "i").isEmpty)
    }
  }

  test("in rows, the floor is weighed at the rows' size in memory, not compressed bytes") {
    withSQLConf(
      SkewAggConf.SKEW_MIN_PARTITION_SIZE.key -> "4000",
      SkewAggConf.SKEW_TASK_SLOTS.key -> "64") {
      val sqlConf = spark.sessionState.conf
      // 31 partitions of 100 bytes and one of 3,000: 30x the median, below the 4,000-byte floor.
      val bytes = Array.fill(31)(100L) :+ 3000L
      assert(GroupsBeyondShuffleKeys.inBytes(bytes, sqlConf).skew.skewed.isEmpty)
      // 6,100 bytes written as 610 rows of 30 bytes in memory (3x the bytes): 300 rows, 9,000
      // bytes in memory, above the floor.
      val rows = GroupsBeyondShuffleKeys.measure(bytes, 610L, 18300L, sqlConf)
      assert(rows.skew.inRows && rows.skew.skewed == Seq((31, 300L)), rows.skew)
      assert(rows.byteFloor == 1333L)
      // Not counted: bytes.
      assert(!GroupsBeyondShuffleKeys.measure(bytes, 0L, 18300L, sqlConf).skew.inRows)
    }
  }
}
