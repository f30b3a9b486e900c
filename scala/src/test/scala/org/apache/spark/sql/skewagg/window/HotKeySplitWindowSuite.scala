package org.apache.spark.sql.skewagg.window

import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.exchange.{ReusedExchangeExec, ShuffleExchangeLike}
import org.apache.spark.sql.execution.window.WindowExec
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  CheapExchanges, ConfScopes, Differential, EveryBuild, LineFeatures, SinceSpark40, SkewAggConf,
  RecordedDecisions, SkewAggSuiteBase, SkewTestData, SpreadOverBuilds
}
import org.apache.spark.sql.skewagg.explain.SkewAggExplain

/** Windows over a hot key, split by order ranges at run time (adaptive execution or not). */
class HotKeySplitWindowSuite extends SkewAggSuiteBase with SpreadOverBuilds {

  private val conf = SkewTestData.conf ++ Seq(
    SkewAggConf.WINDOW_SPLIT_MIN_KEY_ROWS.key -> "100",
    SkewAggConf.WINDOW_SPLIT_SAMPLE_SIZE.key -> "2000")

  /**
   * `(k, o, i, v, d, f)` in 8 partitions: with `hot`, 30% of rows on key 0 (more than one hot
   * key with `hotKeys`), the rest over 1000 keys. o is unique; i has ties (0 to 96, null every
   * 101st); v a long; d a decimal; f a double with NaN, -0.0, 0.0 and nulls.
   */
  private def table(s: SparkSession, rows: Int = 20000, hotKeys: Int = 1): DataFrame = {
    val id = col("id")
    s.range(0, rows, 1, 8).select(
      when(id % 10 < 3, id % hotKeys).otherwise((id * 7919) % 1000 + hotKeys).as("k"),
      ((id * 104729) % rows).as("o"),
      when(id % 101 === 0, lit(null)).otherwise(id % 97).cast("int").as("i"),
      (id * 31 % 1000 - 400).as("v"),
      (id % 1000 / 8).cast("decimal(12,3)").as("d"),
      when(id % 89 === 3, lit(Double.NaN)).when(id % 13 === 1, lit(-0.0))
        .when(id % 13 === 2, lit(0.0)).when(id % 97 === 5, lit(null).cast("double"))
        .otherwise(floor(id / 3) % 50 - 10.5).as("f"))
  }

  private def windowed(select: String, extra: (String, String)*): Differential =
    queried(s"SELECT *, $select FROM t", extra: _*)

  /** `sql` over the table as `t`. */
  private def queried(sql: String, extra: (String, String)*): Differential =
    differential(s => { table(s).createOrReplaceTempView("t"); s.sql(sql) }, conf ++ extra: _*)

  private def splits(d: Differential, adaptive: Boolean = true): Seq[HotKeySplitWindowExec] =
    nodes[HotKeySplitWindowExec](d.plan(on = true, adaptive))

  /**
   * One window split, with and without adaptive execution (then every window that can be split
   * is planned over its exchange, and each decides when its shuffle has run).
   */
  private def assertSplit(d: Differential): Unit = for (adaptive <- Seq(true, false)) {
    val split = splits(d, adaptive).filter(_.metrics("hotKeys").value > 0)
    assert(split.size == 1, d.plan(on = true, adaptive))
    // Without an order the hot key's rows stay in their map-output pieces.
    assert(
      split.head.decision.matches(
        ".*1 hot key split by (order|map-output piece \\(no order\\)) into \\d+ tasks.*"),
      split.head.decision)
    assert(
      split.head.decision.matches(".*; the other keys of those partitions into \\d+ task\\(s\\)"),
      split.head.decision)
    assert(split.head.metrics("splits").value >= 2)
  }

  /**
   * `select` over the table, run once with skewagg and adaptive execution (for properties of one
   * run where Spark's own result is not unique): the rows and the executed plan.
   */
  private def splitRun(select: String): (Seq[Row], SparkPlan) =
    withSQLConf(conf ++ Seq(
      SkewAggConf.ENABLED.key -> "true",
      SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> "true"): _*) {
      table(spark).createOrReplaceTempView("t")
      val query = spark.sql(s"SELECT $select FROM t")
      (query.collect().toSeq, executedPlan(query))
    }

  /**
   * What the rule recorded about the windows (also on the stages below them: adaptive execution
   * keeps its previous plan objects when a rule changes nothing).
   */
  private def windowDecisions(d: Differential): Seq[String] =
    nodes[WindowExec](d.plan(on = true, adaptive = true)).flatMap { w =>
      w.collect { case n => RecordedDecisions.of(n) }.flatten
    }.map(_.text).distinct

  test("whole-partition aggregates without ORDER BY: the key's values on every row") {
    assertSplit(windowed(
      "sum(v) OVER (PARTITION BY k) AS s, count(*) OVER (PARTITION BY k) AS c, " +
        "min(f) OVER (PARTITION BY k) AS lo, max(d) OVER (PARTITION BY k) AS hi, " +
        "avg(f) OVER (PARTITION BY k) AS a, sum(d) OVER (PARTITION BY k) AS sd, " +
        "count(i) OVER (PARTITION BY k) AS ci"))
  }

  test("a column Spark cannot hash (a variant) beside a window without ORDER BY", SinceSpark40) {
    assume(LineFeatures.variants, "Spark 3.5 has no VARIANT type")
    // Checkpointed, so that the variant is a column of the window's input, not computed above.
    val d = differential(
      s => {
        table(s).selectExpr("*", "parse_json(concat('{\"v\":', v, '}')) AS j")
          .localCheckpoint().createOrReplaceTempView("variants")
        s.sql("SELECT k, j, sum(v) OVER (PARTITION BY k) AS s FROM variants")
      },
      conf: _*)
    assertSplit(d)
    assert(
      splits(d).head.child.output.exists(c => LineFeatures.isVariant(c.dataType)),
      d.plan(on = true, adaptive = true))
  }

  test("running ROWS frames over a unique order, ascending and descending") {
    assertSplit(windowed(
      "sum(v) OVER (PARTITION BY k ORDER BY o ROWS BETWEEN UNBOUNDED PRECEDING AND " +
        "CURRENT ROW) AS s, count(i) OVER (PARTITION BY k ORDER BY o ROWS BETWEEN UNBOUNDED " +
        "PRECEDING AND CURRENT ROW) AS c, min(f) OVER (PARTITION BY k ORDER BY o ROWS BETWEEN " +
        "UNBOUNDED PRECEDING AND CURRENT ROW) AS lo, row_number() OVER (PARTITION BY k ORDER " +
        "BY o) AS rn, ntile(7) OVER (PARTITION BY k ORDER BY o) AS nt, ntile(100000) OVER " +
        "(PARTITION BY k ORDER BY o) AS nt_many"))
    assertSplit(windowed(
      "sum(d) OVER (PARTITION BY k ORDER BY o DESC ROWS BETWEEN UNBOUNDED PRECEDING AND " +
        "CURRENT ROW) AS s, avg(d) OVER (PARTITION BY k ORDER BY o DESC ROWS BETWEEN " +
        "UNBOUNDED PRECEDING AND CURRENT ROW) AS a, row_number() OVER (PARTITION BY k ORDER " +
        "BY o DESC) AS rn"))
  }

  test("bounded ROWS frames: moving aggregates reaching into the splits around, never the keys") {
    for (order <- Seq("o DESC")) { // (ascending: GlobalWindowSplitSuite)
      def rows(frame: String) = s"(PARTITION BY k ORDER BY $order ROWS BETWEEN $frame)"
      val last7 = rows("6 PRECEDING AND CURRENT ROW")
      val around = rows("20 PRECEDING AND 20 FOLLOWING")
      val ahead = rows("2 FOLLOWING AND 300 FOLLOWING")
      assertSplit(windowed(
        s"sum(v) OVER $last7 AS s7, avg(f) OVER $last7 AS a7, count(i) OVER $around AS c, " +
          s"avg(d) OVER $around AS ad, max(f) OVER $ahead AS hi, sum(v) OVER $ahead AS sa, " +
          s"variance(v) OVER $around AS var, row_number() OVER (PARTITION BY k ORDER BY $order) " +
          "AS rn"))
    }
  }

  test("bounded RANGE frames: moving sums over values, per key, across the splits around") {
    for (order <- Seq("i DESC", "o")) { // (more orders: GlobalWindowSplitSuite)
      def range(frame: String) = s"(PARTITION BY k ORDER BY $order RANGE BETWEEN $frame)"
      val back = range("5 PRECEDING AND CURRENT ROW")
      val around = range("30 PRECEDING AND 30 FOLLOWING")
      assertSplit(windowed(
        s"sum(v) OVER $back AS s, count(i) OVER $around AS c, max(d) OVER $around AS hi, " +
          s"rank() OVER (PARTITION BY k ORDER BY $order) AS r"))
    }
  }

  test("running RANGE frames and ranks over ties: peers never straddle a split") {
    for (order <- Seq("i", "i DESC", "i ASC NULLS LAST", "i DESC NULLS FIRST, d")) {
      val w = s"(PARTITION BY k ORDER BY $order)"
      assertSplit(windowed(
        s"sum(v) OVER $w AS s, count(*) OVER $w AS c, max(d) OVER $w AS hi, " +
          s"sum(d) OVER $w AS sd, rank() OVER $w AS r, dense_rank() OVER $w AS dr, " +
          s"percent_rank() OVER $w AS pr, cume_dist() OVER $w AS cd, " +
          s"sum(v) OVER (PARTITION BY k ORDER BY $order ROWS BETWEEN UNBOUNDED PRECEDING " +
          "AND UNBOUNDED FOLLOWING) AS whole"))
    }
  }

  test("ordered by a double with NaN, -0.0, 0.0 and nulls: ranks and running counts") {
    val w = "(PARTITION BY k ORDER BY f)"
    assertSplit(windowed(
      s"rank() OVER $w AS r, dense_rank() OVER $w AS dr, count(*) OVER $w AS c, " +
        s"cume_dist() OVER $w AS cd, percent_rank() OVER $w AS pr, " +
        s"min(v) OVER $w AS lo"))
  }

  test("lag, lead, first, last and nth values over a unique order, reaching across splits") {
    for (order <- Seq("o", "o DESC")) {
      val w = s"(PARTITION BY k ORDER BY $order)"
      val running = s"(PARTITION BY k ORDER BY $order ROWS BETWEEN UNBOUNDED PRECEDING AND " +
        "CURRENT ROW)"
      val whole = s"(PARTITION BY k ORDER BY $order ROWS BETWEEN UNBOUNDED PRECEDING AND " +
        "UNBOUNDED FOLLOWING)"
      val sparse = "(CASE WHEN o % 7 < 5 THEN NULL ELSE v END)" // runs of nulls
      assertSplit(windowed(
        s"lag(v) OVER $w AS l1, lag(d, 3, -1) OVER $w AS l3, lag(v, 2, o) OVER $w AS lo, " +
          s"lag(v, 1000) OVER $w AS far, lead(f) OVER $w AS n1, lead(v, 1000, 7) OVER $w AS " +
          s"nfar, lead(d, 2) OVER $w AS n2, lag($sparse, 2) IGNORE NULLS OVER $w AS li, " +
          s"lead($sparse, 3) IGNORE NULLS OVER $w AS ni, lead(f) IGNORE NULLS OVER $w AS nf1, " +
          s"first_value(i) OVER $w AS fv, last_value($sparse) IGNORE NULLS OVER $w AS lv, " +
          s"first_value($sparse) IGNORE NULLS OVER $running AS fr, last_value(f) OVER $running " +
          s"AS lr, nth_value(f, 2) OVER $w AS nf, nth_value($sparse, 900) IGNORE NULLS OVER " +
          s"$running AS nr, nth_value(i, 1000) OVER $whole AS nw, last_value(v) OVER $whole " +
          s"AS lw, sum(v) OVER $w AS s"))
    }
  }

  test("ties: every function of a split window reads one order of the key's rows") {
    // Over ties Spark's window reads the peers in any order, so runs are not compared: the split
    // must read one order too, the same in its summary and its evaluation, for every function.
    for (order <- Seq("i", "f DESC")) {
      val w = s"(PARTITION BY k ORDER BY $order)"
      val (rows, plan) = splitRun(
        s"*, row_number() OVER $w AS rn, lag(o) OVER $w AS prev, lead(o, 2) OVER $w " +
          s"AS next2, first_value(o) OVER (PARTITION BY k ORDER BY $order ROWS BETWEEN " +
          s"UNBOUNDED PRECEDING AND CURRENT ROW) AS first, last_value(o) OVER $w AS lastPeer, " +
          s"nth_value(o, 700) OVER $w AS at700, rank() OVER $w AS peer")
      val byRank = rows.filter(_.getAs[Long]("k") == 0).sortBy(_.getAs[Int]("rn")).toIndexedSeq
      val split = nodes[HotKeySplitWindowExec](plan)
      assert(
        split.size == 1 && split.head.metrics("splits").value >= 2,
        SkewAggExplain.explain(plan))
      assert(byRank.map(_.getAs[Int]("rn")) == (1 to byRank.size))
      val o = byRank.map(_.getAs[Long]("o"))
      byRank.indices.foreach { r =>
        val row = byRank(r)
        assert(Option(row.getAs[Any]("prev")) == (if (r == 0) None else Some(o(r - 1))), row)
        assert(Option(row.getAs[Any]("next2")) == o.lift(r + 2), row)
        assert(row.getAs[Long]("first") == o.head, row)
        // The peers of a row: the rows of its rank, consecutive in row numbers.
        val peers = byRank.indices.filter(byRank(_).getAs[Int]("peer") == row.getAs[Int]("peer"))
        assert(peers == (peers.head to peers.last) && peers.contains(r), row)
        assert(row.getAs[Long]("lastPeer") == o(peers.last), row)
        val at700 = if (peers.last >= 699) Some(o(699)) else None // (RANGE: to the last peer)
        assert(Option(row.getAs[Any]("at700")) == at700, row)
      }
    }
  }

  test("ties in arrival order when no pass reads a split again: rows numbered 1 to n") {
    // row_number, rank and a ROWS count alone: summarized as the rows are routed, and each split
    // sorted as Spark sorts (its ties in no set order); each still numbers its rows after the
    // rows of the splits before it.
    val w = "(PARTITION BY k ORDER BY i)"
    val (rows, plan) = splitRun(
      s"*, row_number() OVER $w AS rn, rank() OVER $w AS r, count(*) OVER (PARTITION BY k " +
        "ORDER BY i ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS c")
    val split = nodes[HotKeySplitWindowExec](plan)
    assert(
      split.size == 1 && split.head.metrics("splits").value >= 2,
      SkewAggExplain.explain(plan))
    val hot = rows.filter(_.getAs[Long]("k") == 0).sortBy(_.getAs[Int]("rn")).toIndexedSeq
    assert(hot.map(_.getAs[Int]("rn")) == (1 to hot.size))
    assert(hot.forall(row => row.getAs[Long]("c") == row.getAs[Int]("rn")))
    // In row-number order i never decreases (nulls first), and a rank is its peers' first row.
    val i = hot.map(row => Option(row.getAs[Any]("i")).map(_.asInstanceOf[Int]))
    assert(i == i.sorted)
    hot.indices.foreach(r => assert(hot(r).getAs[Int]("r") == i.indexOf(i(r)) + 1, hot(r)))
  }

  test("without an order: first and last values are one row's, the same on every row") {
    // (Which row is first is Spark's choice too, so runs are not compared.)
    val w = "(PARTITION BY k)"
    val (rows, plan) = splitRun(
      s"k, o, i, first_value(o) OVER $w AS first, last_value(i, true) OVER $w AS last, " +
        s"count(*) OVER $w AS c")
    val hot = rows.filter(_.getAs[Long]("k") == 0).toIndexedSeq
    val split = nodes[HotKeySplitWindowExec](plan)
    assert(
      split.size == 1 && split.head.decision.contains("split by map-output piece"),
      SkewAggExplain.explain(plan))
    assert(hot.map(_.getAs[Long]("c")).distinct == Seq(hot.size.toLong))
    Seq("first", "last").foreach(f => assert(hot.map(_.getAs[Any](f)).distinct.size == 1, f))
    assert(hot.map(_.getAs[Long]("o")).contains(hot.head.getAs[Long]("first")))
    assert(hot.map(_.getAs[Any]("i")).contains(hot.head.getAs[Any]("last")))
    assert(hot.head.getAs[Any]("last") != null) // (IGNORE NULLS)
  }

  test("a hot key too large for a ranking function's int runs Spark's window in one task") {
    // (Spark numbers rows with ints: the limit, lowered here, is 2,147,483,647 rows.)
    val d = windowed(
      "row_number() OVER (PARTITION BY k ORDER BY o) AS rn, sum(v) OVER (PARTITION BY k " +
        "ORDER BY o) AS s",
      SkewAggConf.TEST_WINDOW_MAX_RANKED_ROWS.key -> "1000")
    assert(splits(d).size == 1 && splits(d).head.metrics("splitRows").value == 0)
    val sums = windowed(
      "sum(v) OVER (PARTITION BY k ORDER BY o) AS s",
      SkewAggConf.TEST_WINDOW_MAX_RANKED_ROWS.key -> "1000")
    assert(splits(sums).head.metrics("splitRows").value > 0)
  }

  test("several hot keys") {
    val d = differential(
      s => {
        table(s, rows = 30000, hotKeys = 3).createOrReplaceTempView("t3")
        s.sql("SELECT *, dense_rank() OVER (PARTITION BY k ORDER BY i) AS dr, " +
          "sum(v) OVER (PARTITION BY k ORDER BY i) AS s FROM t3")
      },
      conf: _*)
    val split = splits(d)
    assert(split.size == 1 && split.head.metrics("hotKeys").value >= 2, split.head.decision)
  }

  test("the routing shuffle through Spark's serialized writer, which moves rows' bytes") {
    // (A shuffle of more partitions than the bypass threshold is written by the sort writer of
    // serialized records; the threshold is read as each shuffle is registered.)
    ConfScopes.withSparkConf(
      spark.sparkContext.conf,
      "spark.shuffle.sort.bypassMergeThreshold" -> Some("0")) {
      assertSplit(windowed(
        "sum(v) OVER (PARTITION BY k ORDER BY i) AS s, rank() OVER (PARTITION BY k ORDER BY i) " +
          "AS r, lag(f, 2) OVER (PARTITION BY k ORDER BY o) AS lg"))
    }
  }

  test("a window's shuffle reused (one side of a union of the same window twice)") {
    val d = differential(
      s => {
        table(s).createOrReplaceTempView("t")
        s.sql("SELECT k, o, row_number() OVER (PARTITION BY k ORDER BY o) AS rn FROM t")
          .createOrReplaceTempView("w")
        s.sql("SELECT k, o, rn FROM w WHERE o % 2 = 0 UNION ALL SELECT k, o, rn FROM w")
      },
      conf: _*)
    for (adaptive <- Seq(true, false)) {
      val split = splits(d, adaptive)
      assert(split.size == 2, d.plan(on = true, adaptive))
      assert(split.forall(_.metrics("hotKeys").value == 1), split.map(_.decision))
    }
    assert(
      d.plan(on = true, adaptive = false).exists(_.isInstanceOf[ReusedExchangeExec]),
      d.plan(on = true, adaptive = false))
  }

  test("integral sums in ANSI mode: the running sum overflows where Spark's does", EveryBuild) {
    val unit = Long.MaxValue / 1024
    val big = s"(CASE WHEN (o DIV 10) % 2 = 0 THEN $unit ELSE ${-unit} END)"
    assertSplit(windowed(
      s"sum($big) OVER (PARTITION BY k ORDER BY o ROWS BETWEEN UNBOUNDED PRECEDING AND " +
        "CURRENT ROW) AS s",
      SQLConf.ANSI_ENABLED.key -> "true"))
    assertSplit(
      windowed(s"sum($big) OVER (PARTITION BY k) AS total", SQLConf.ANSI_ENABLED.key -> "true"))
    // Overflowing in the window, and in its input before its shuffle (the map stage fails).
    val overflowing = s"(CASE WHEN k = 0 THEN ${Long.MaxValue / 1000} ELSE 1 END)"
    val failing = Seq(
      s"SELECT sum($overflowing) OVER (PARTITION BY k) FROM t",
      s"SELECT sum(w) OVER (PARTITION BY k) FROM (SELECT k, o * ${Long.MaxValue / 10} AS w FROM t)")
    for (query <- failing) {
      val errors = for (adaptive <- Seq(false, true); on <- Seq(false, true)) yield {
        withSQLConf(conf ++ Seq(
          SQLConf.ANSI_ENABLED.key -> "true",
          SkewAggConf.ENABLED.key -> on.toString,
          SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> adaptive.toString): _*) {
          table(spark).createOrReplaceTempView("t")
          val error = intercept[Exception](spark.sql(query).collect())
          assert(error.getMessage.contains("ARITHMETIC_OVERFLOW"), error.getMessage)
          (adaptive, error.getClass)
        }
      }
      assert(errors.groupBy(_._1).values.forall(_.map(_._2).distinct.size == 1), errors)
    }
  }

  test("refused, with the reason: frames and functions that are not split") {
    val moment = windowed("stddev(v) OVER (PARTITION BY k) AS sd")
    assert(splits(moment).isEmpty)
    assert(
      windowDecisions(moment).exists(_.contains("is not split: only count, sum, avg")),
      windowDecisions(moment))
    val far = windowed("lag(v, 1001) OVER (PARTITION BY k ORDER BY o) AS n")
    assert(windowDecisions(far).exists(_.contains("lag by more than 1000 rows is not")))
    val sliding = windowed(
      "sum(v) OVER (PARTITION BY k ORDER BY o RANGE BETWEEN CURRENT ROW AND UNBOUNDED " +
        "FOLLOWING) AS s")
    assert(splits(sliding).isEmpty)
    assert(windowDecisions(sliding).exists(_.contains("only whole-partition frames, running")))
    val doubles = windowed("sum(f) OVER (PARTITION BY k ORDER BY o) AS s")
    assert(splits(doubles).isEmpty)
    assert(windowDecisions(doubles).exists(_.contains(
      SkewAggConf.WINDOW_SPLIT_FLOATING_POINT_ENABLED.key)))
    val off =
      windowed("sum(v) OVER (PARTITION BY k) AS s", SkewAggConf.WINDOW_ENABLED.key -> "false")
    assert(splits(off).isEmpty)
    assert(windowDecisions(off).exists(_.contains("switched off")))
  }

  test("a filter on the rank: Spark limits each key's rows below the window, left alone") {
    val d = queried(
      "SELECT * FROM (SELECT *, rank() OVER (PARTITION BY k ORDER BY o) AS r FROM t) WHERE r <= 5")
    assert(splits(d).isEmpty)
    assert(
      windowDecisions(d).exists(_.contains("Spark keeps only each key's first 5 rows by rank on " +
        "both sides of the window's shuffle (WindowGroupLimit")),
      windowDecisions(d))
  }

  test("hints on windows: NO_SKEW_AGG leaves them to Spark, SKEW_AGG reads every partition") {
    val forbidden = queried(
      "SELECT /*+ NO_SKEW_AGG */ * FROM (SELECT *, sum(v) OVER (PARTITION BY k) AS s FROM t) sub")
    assert(splits(forbidden).isEmpty)
    assert(
      windowDecisions(forbidden).contains("left alone: hint NO_SKEW_AGG."),
      windowDecisions(forbidden))
    // No partition is skewed by these thresholds: only the hint splits the hot key.
    val even = conf :+ (SkewAggConf.SKEW_FACTOR.key -> "1000")
    val sql = queried(
      "SELECT /*+ SKEW_AGG(k) */ *, row_number() OVER (PARTITION BY k ORDER BY o) AS rn FROM t",
      SkewAggConf.SKEW_FACTOR.key -> "1000")
    assert(splits(sql).head.decision.startsWith("hint SKEW_AGG: 32 partition(s)"), splits(sql))
    assertSplit(sql)
    val frame = differential(
      s => {
        val w = org.apache.spark.sql.expressions.Window.partitionBy("k").orderBy("o")
        table(s).withColumn("s", sum("v").over(w)).hint("skew_agg")
      },
      even: _*)
    assertSplit(frame)
    assert(splits(windowed("sum(v) OVER (PARTITION BY k) AS s", even: _*)).isEmpty)
    val error = intercept[Exception] {
      table(spark).createOrReplaceTempView("t")
      spark.sql("SELECT /*+ SKEW_AGG(nope) */ *, sum(v) OVER (PARTITION BY k) FROM t").collect()
    }
    assert(
      error.getMessage.contains("SKEW_AGG hint names column `nope`, which is not a column " +
        "of the window's input"),
      error.getMessage)
  }

  test("the explanation: each window, split with its numbers or left alone with the reason") {
    val split = windowed("sum(v) OVER (PARTITION BY k) AS s")
    val far = windowed("lag(v, 1001) OVER (PARTITION BY k ORDER BY o) AS n")
    for (adaptive <- Seq(true, false)) {
      val text = SkewAggExplain.explain(split.plan(on = true, adaptive))
      assert(
        text.contains("window 1: PARTITION BY k: s\n  rewritten: 1 skewed partition(s) of " +
          "the window's shuffle"),
        text)
      assert(text.contains("1 hot key split by map-output piece (no order) into"), text)
      val refused = SkewAggExplain.explain(far.plan(on = true, adaptive))
      assert(
        refused.contains("window 1: PARTITION BY k: n\n  left alone: lag(t.v, ") &&
          refused.contains("is not split: lag by more than 1000 rows is not"),
        refused)
    }
  }

  test("uniform data: Spark's window, not skewed") {
    val d = differential(
      s => {
        table(s, hotKeys = 1000).createOrReplaceTempView("u")
        s.sql("SELECT *, sum(v) OVER (PARTITION BY k) AS s FROM u")
      },
      conf: _*)
    assert(splits(d).isEmpty)
    assert(windowDecisions(d).exists(_.startsWith("not skewed")), windowDecisions(d))
    val notAdaptive = splits(d, adaptive = false)
    assert(notAdaptive.size == 1, d.plan(on = true, adaptive = false))
    assert(notAdaptive.head.decision.startsWith("no partition of the window's shuffle skewed"))
  }

  test("five keys of one size in 8 partitions on 64 slots: each split, by the per-slot share") {
    // No key is hotter than another, so no partition stands out against the median; each key
    // is 1/5 of the stage, above 5x its even share on 64 slots (1/12.8), so each is split.
    val d = differential(
      s => {
        val id = col("id")
        s.range(0, 20000, 1, 8).select(
          (id % 5).as("k"),
          ((id * 104729) % 20000).as("o"),
          (id * 31 % 1000 - 400).as("v")).createOrReplaceTempView("five")
        s.sql("SELECT *, row_number() OVER (PARTITION BY k ORDER BY o) AS rn, " +
          "sum(v) OVER (PARTITION BY k ORDER BY o) AS s FROM five")
      },
      conf :+ (SQLConf.SHUFFLE_PARTITIONS.key -> "8"): _*)
    for (adaptive <- Seq(true, false)) {
      val split = splits(d, adaptive)
      assert(split.size == 1, d.plan(on = true, adaptive))
      val decision = split.head.decision
      assert(split.head.metrics("hotKeys").value == 5, decision)
      assert(decision.contains("skewed partition(s) of the window's shuffle ("), decision)
      assert(decision.contains("x the per-slot share on 64 slots"), decision)
      assert(decision.contains("5 hot keys split by order into "), decision)
      assert(!decision.contains("other keys"), decision) // (there are none)
      // (Against the median alone none is: the largest is about 2x a median partition.)
      assert(decision.matches(".*partition \\d+ is .*, [1-4]x the median .*"), decision)
    }
  }

  test("a chain of windows on different keys: the skewed one is split, the other is Spark's") {
    val d = windowed(
      "sum(v) OVER (PARTITION BY k ORDER BY o) AS s, row_number() OVER (PARTITION BY i " +
        "ORDER BY o) AS rn, lag(v) OVER (PARTITION BY i ORDER BY o) AS l")
    assertSplit(d)
    assert(splits(d).head.partitionSpec.map(_.sql) == Seq("t.k"), splits(d))
    assert(nodes[WindowExec](d.plan(on = true, adaptive = true)).size == 1)
  }

  test("a chain of windows on the same key, each with its own order: every one split") {
    val byI = "(PARTITION BY k ORDER BY i DESC NULLS LAST)"
    val byO = "(PARTITION BY k ORDER BY o)"
    val d = windowed(
      s"sum(v) OVER (PARTITION BY k) AS total, row_number() OVER $byO AS rn, lag(d, 2) OVER " +
        s"$byO AS l2, rank() OVER $byI AS r, dense_rank() OVER $byI AS dr, sum(d) OVER $byI " +
        "AS running, count(*) OVER (PARTITION BY k ORDER BY f) AS c")
    assertSplit(d)
    for (adaptive <- Seq(true, false)) {
      val plan = d.plan(on = true, adaptive)
      assert(splits(d, adaptive).head.windows.size == 4, plan)
      assert(nodes[WindowExec](plan).isEmpty, plan)
    }
    // Spark's plan methods read every window's expressions (references, canonical forms).
    val references = splits(d).head.references.map(_.name).toSet
    assert(Set("k", "o", "i", "v", "d", "f").subsetOf(references), references)
    // The ranges of the next windows: the decision names them.
    assert(
      splits(d).head.decision.contains("then by the next window's order into"),
      splits(d).head.decision)
    // A hot key too large for a ranking function's int is left to Spark's chain in one task.
    val large = windowed(
      s"row_number() OVER $byO AS rn, sum(v) OVER $byI AS s",
      SkewAggConf.TEST_WINDOW_MAX_RANKED_ROWS.key -> "1000")
    assert(splits(large).size == 1 && splits(large).head.metrics("splitRows").value == 0)
  }

  test("a chain on the same key: refused when a window orders by a result of one below") {
    val d = queried(
      "SELECT *, sum(v) OVER (PARTITION BY k ORDER BY rn) AS s FROM (SELECT *, " +
        "row_number() OVER (PARTITION BY k ORDER BY o) AS rn FROM t)")
    assert(splits(d).isEmpty && splits(d, adaptive = false).isEmpty)
    assert(
      windowDecisions(d).exists(_.contains("orders by a result of a window below it")),
      windowDecisions(d))
  }

  test("an aggregate on the window's key above: split, its partial aggregates exchanged") {
    val d = queried(
      "SELECT k, max(rn) FROM (SELECT k, row_number() OVER (PARTITION BY k ORDER BY o) AS rn " +
        "FROM t) GROUP BY k")
    assertSplit(d)
    for (adaptive <- Seq(true, false)) {
      val plan = d.plan(on = true, adaptive)
      assert(
        nodes[ShuffleExchangeLike](plan).exists(CheapExchanges.isCheapExchange),
        s"no exchange of partial aggregates above the split:\n$plan")
    }
  }

  test("a window on the key over a filter of the split one: not split, saying why") {
    val d = queried(
      "SELECT *, sum(v) OVER (PARTITION BY k ORDER BY o) AS s FROM (SELECT *, row_number() " +
        "OVER (PARTITION BY k ORDER BY o) AS rn FROM t) WHERE rn > 3")
    assert(splits(d).isEmpty)
    assert(
      windowDecisions(d).exists(_.contains("a node above relies on")),
      s"${windowDecisions(d)}\n${d.plan(on = true, adaptive = true)}")
    // The split it tried and refused is not recorded as a rewrite.
    assert(!windowDecisions(d).exists(_.startsWith("rewritten")), windowDecisions(d))
  }
}
