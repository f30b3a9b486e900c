package org.apache.spark.sql.skewagg.singlekey

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  EveryBuild, LineFeatures, SkewAggConf, SkewAggSuiteBase, SpreadOverBuilds
}

import org.apache.spark.sql.skewagg.SkewTestData.{holisticTable, percentilesOfV}

/**
 * Exact percentiles of hot keys split by value across tasks (HotKeySplitAggregate): Spark's
 * rows (differential: skewagg off/on x adaptive off/on) with thresholds low enough that the
 * split happens, and the metrics that show it did (or did not).
 */
class HotKeySplitAggregateSuite extends SkewAggSuiteBase with SpreadOverBuilds {

  private val Rows = 4000

  /** Key 0 holds over 40% of the rows (four average partitions of 8), keys 0 to 100 the rest. */
  private val oneHotKey: SparkSession => DataFrame =
    s => holisticTable(s, when(col("id") % 10 < 4, lit(0L)).otherwise(col("id") % 101), Rows)

  /**
   * Low enough that key 0 above is split (the sample reads one of the 2 input partitions), on
   * 64 task slots (on local[2]'s 2 no key outlasts an even share).
   */
  private val splitting = Seq(
    SkewAggConf.SINGLE_KEY_SPLIT_MIN_KEY_ROWS.key -> "100",
    SQLConf.SHUFFLE_PARTITIONS.key -> "8",
    SkewAggConf.SKEW_TASK_SLOTS.key -> "64")

  private def view(input: SparkSession => DataFrame, select: String): SparkSession => DataFrame =
    s => {
      input(s).createOrReplaceTempView("t")
      s.sql(s"SELECT k, $select FROM t GROUP BY k")
    }

  private def splitOperator(plan: SparkPlan): HotKeySplitAggregateExec = {
    val found = nodes[HotKeySplitAggregateExec](plan)
    assert(found.size == 1, plan)
    found.head
  }

  /** Runs the differential and returns, per adaptive mode, the operator of the skewagg run. */
  private def splitRuns(
      query: SparkSession => DataFrame,
      conf: (String, String)*): Seq[HotKeySplitAggregateExec] = {
    val d = differential(query, splitting ++ conf: _*)
    assert(d.rows.nonEmpty)
    Seq(false, true).map { adaptive =>
      assert(nodes[HotKeySplitAggregateExec](d.plan(on = false, adaptive)).isEmpty)
      splitOperator(d.plan(on = true, adaptive))
    }
  }

  private def assertSplit(op: HotKeySplitAggregateExec, hotKeys: Int): Unit = {
    assert(op.metrics("hotKeys").value == hotKeys, op.metrics)
    assert(op.metrics("splits").value > hotKeys, op.metrics) // more than one split per key
  }

  private val percentiles = percentilesOfV.mkString(", ")

  test("every percentile function on a split hot key, with sum, count, avg, max, FILTER") {
    val others = "sum(v), count(*), count(v), avg(i), max(s), min(d), sum(i) FILTER (WHERE i > 1)"
    splitRuns(view(oneHotKey, s"$percentiles, $others")).foreach(assertSplit(_, hotKeys = 1))
  }

  test("percentiles alone on a split hot key") {
    splitRuns(view(oneHotKey, percentiles)).foreach { op =>
      assertSplit(op, hotKeys = 1)
      assert(op.metrics("numOutputRows").value == 101) // keys processed: 0 to 100
      assert(op.metrics("numInputRows").value == Rows)
    }
  }

  test("percentiles of ints, decimals and intervals on a split hot key") {
    val select = "percentile(i, 0.5), percentile(i, array(0.2, 0.8)), count(i)"
    splitRuns(view(oneHotKey, select)).foreach(assertSplit(_, hotKeys = 1))
    splitRuns(view(oneHotKey, "percentile(d, 0.5), percentile(d, array(0.1, 0.9)), median(d)"))
      .foreach(assertSplit(_, hotKeys = 1))
    splitRuns(view(oneHotKey, "percentile(make_ym_interval(0, i), array(0.2, 0.7))"))
      .foreach(assertSplit(_, hotKeys = 1))
    splitRuns(view(oneHotKey, "median(make_dt_interval(0, 0, i, 0))"))
      .foreach(assertSplit(_, hotKeys = 1))
  }

  test("several hot keys, one of them the null key") {
    val input: SparkSession => DataFrame = s =>
      holisticTable(
        s,
        when(col("id") % 10 < 3, lit(0L)).when(col("id") % 10 < 6, lit(null).cast("long"))
          .otherwise(col("id") % 31),
        Rows)
    splitRuns(view(input, s"$percentiles, count(*), avg(v)")).foreach(assertSplit(_, hotKeys = 2))
  }

  test("two grouping keys, below a global sort and a join") {
    splitRuns(
      s => {
        oneHotKey(s).createOrReplaceTempView("t")
        s.sql("SELECT a.k, a.s, a.m, a.n, b.c FROM (SELECT k, s, median(v) AS m, count(*) AS n " +
          "FROM t GROUP BY k, s) a JOIN (SELECT k, count(*) AS c FROM t GROUP BY k) b " +
          "ON a.k = b.k ORDER BY a.k, a.s")
      },
      SQLConf.SHUFFLE_PARTITIONS.key -> "20").foreach { op =>
      // Average partition 200 rows; (0, s) has about 330 for each of the 5 values of s.
      assert(op.metrics("hotKeys").value >= 2, op.metrics)
      assert(op.metrics("splits").value > op.metrics("hotKeys").value, op.metrics)
    }
  }

  test("a hot key whose values are all null") {
    val input: SparkSession => DataFrame = s =>
      oneHotKey(s)
        .withColumn("v", when(col("k") === 0, lit(null).cast("double")).otherwise(col("v")))
    val d =
      differential(view(input, "percentile(v, 0.5), median(v), count(*), count(v)"), splitting: _*)
    assert(d.rows.exists(r => r.getLong(0) == 0L && r.isNullAt(1) && r.getLong(3) > 1600L))
  }

  test("the median interpolated between two values held by two different splits", EveryBuild) {
    // Key 0: 1.0 and 2.0, 800 of each; the median (ranks 799 and 800) is 1.5. Equal values
    // always meet in one split, so 1.0 and 2.0 are in two splits.
    val input: SparkSession => DataFrame = s =>
      s.range(0, Rows).select(
        when(col("id") % 10 < 4, lit(0L)).otherwise(col("id") % 101).as("k"),
        when(col("id") % 2 === 0, lit(1.0)).otherwise(lit(2.0)).as("v"),
        (col("id") % 3).as("f"))
    val select = "median(v), percentile(v, array(0.5, 0.25)), " +
      "percentile_cont(0.5) WITHIN GROUP (ORDER BY v DESC), percentile(v, 0.5, f), sum(v)"
    val runs = splitRuns(view(input, select))
    runs.foreach { op =>
      assertSplit(op, hotKeys = 1)
      assert(op.metrics("splitInterpolations").value >= 3, op.metrics)
    }
    val hot = differential(view(input, "median(v)"), splitting: _*).rows.find(_.getLong(0) == 0L)
    assert(hot.get.getDouble(1) == 1.5)
  }

  test("uniform data: no key is split") {
    val uniform: SparkSession => DataFrame = s => holisticTable(s, col("id") % 101, Rows)
    val d = differential(view(uniform, s"$percentiles, count(*)"), splitting: _*)
    for (adaptive <- Seq(false, true)) {
      val op = splitOperator(d.plan(on = true, adaptive))
      assert(op.metrics("hotKeys").value == 0 && op.metrics("splits").value == 0, op.metrics)
      assert(op.metrics("numOutputRows").value == 101)
    }
  }

  test("empty input") {
    val empty: SparkSession => DataFrame = s => oneHotKey(s).where(col("k") < 0)
    val d = differential(view(empty, "percentile(v, 0.5), count(*)"), splitting: _*)
    assert(d.rows.isEmpty)
  }

  test("a key below spark.skewagg.singleKey.split.minKeyRows is not split") {
    val d = differential(
      view(oneHotKey, "median(v)"),
      SkewAggConf.SINGLE_KEY_SPLIT_MIN_KEY_ROWS.key -> "2000")
    val op = splitOperator(d.plan(on = true, adaptive = false))
    assert(op.metrics("hotKeys").value == 0)
  }

  test("task slots: the hot key split when planned for 64 slots, left alone on 2") {
    // Key 0 holds 40% of the rows: 26x the per-slot share on 64 slots, 0.8x on 2.
    val query = view(oneHotKey, "median(v), count(*)")
    splitRuns(query).foreach(assertSplit(_, hotKeys = 1))
    for (op <- splitRuns(query, SkewAggConf.SKEW_TASK_SLOTS.key -> "2")) {
      assert(op.metrics("hotKeys").value == 0 && op.metrics("splits").value == 0, op.metrics)
      assert(op.decision.contains("not more than 5.0x the per-slot share"), op.decision)
      assert(op.decision.contains("on 2 task slots"), op.decision)
    }
  }

  test("spark.skewagg.singleKey.split.maxSplits caps the splits of a key") {
    val d = differential(
      view(oneHotKey, "median(v)"),
      splitting ++ Seq(
        SkewAggConf.SINGLE_KEY_SPLIT_MAX_SPLITS.key -> "2",
        SQLConf.SHUFFLE_PARTITIONS.key -> "50"): _*)
    val op = splitOperator(d.plan(on = true, adaptive = false))
    assert(op.metrics("hotKeys").value == 1 && op.metrics("splits").value == 2, op.metrics)
  }

  test("a negative frequency in a split hot key fails as in Spark", EveryBuild) {
    val input: SparkSession => DataFrame = s =>
      oneHotKey(s)
        .withColumn("f", when(col("k") === 0 && col("i") === 3, lit(-1L)).otherwise(lit(1L)))
    for (on <- Seq(false, true)) {
      withSQLConf(splitting ++ Seq(SkewAggConf.ENABLED.key -> on.toString): _*) {
        val e = intercept[Exception](view(input, "percentile(v, 0.5, f)")(spark).collect())
        assert(e.getMessage.contains(LineFeatures.negativeFrequencyText), e.getMessage)
      }
    }
  }

  /** Aggregates the split leaves to SingleKeyAggregate without splitting (still exact). */
  private val unsplit =
    (if (LineFeatures.orderedMode) {
       Seq("mode" -> "percentile(v, 0.5), mode() WITHIN GROUP (ORDER BY v)")
     } else Nil) ++ Seq(
      "collect_list" -> "percentile(v, 0.5), array_sort(collect_list(i))",
      "percentile_approx" -> "percentile(v, 0.5), percentile_approx(v, 0.5)",
      "a percentile with FILTER" -> "percentile(v, 0.5) FILTER (WHERE i > 2)",
      "split disabled" -> "percentile(v, 0.5)")

  test("not split: a nondeterministic input") {
    val input: SparkSession => DataFrame = s => oneHotKey(s).withColumn("r", rand(7))
    withSQLConf(splitting: _*) {
      val plan = executedPlan(view(input, "percentile(r, 0.5)")(spark))
      assert(nodes[HotKeySplitAggregateExec](plan).isEmpty, plan)
      assert(nodes[SingleKeyAggregateExec](plan).size == 1, plan)
    }
  }

  for ((name, select) <- unsplit) {
    // Modes read shims that differ between lines (ModeOrders, SkewAggModeKeys): every build.
    test(s"not split: $name", (if (name == "mode") Seq(EveryBuild) else Nil): _*) {
      val conf = if (name == "split disabled") {
        Seq(SkewAggConf.SINGLE_KEY_SPLIT_ENABLED.key -> "false")
      } else Nil
      val d = differential(view(oneHotKey, select), splitting ++ conf: _*)
      for (adaptive <- Seq(false, true)) {
        val plan = d.plan(on = true, adaptive)
        assert(nodes[HotKeySplitAggregateExec](plan).isEmpty, plan)
        assert(nodes[SingleKeyAggregateExec](plan).size == 1, plan)
      }
    }
  }
}
