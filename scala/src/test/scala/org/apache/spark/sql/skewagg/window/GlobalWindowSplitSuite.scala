package org.apache.spark.sql.skewagg.window

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeLike
import org.apache.spark.sql.execution.window.WindowExec
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  CheapExchanges, Differential, EveryBuild, SkewAggConf, RecordedDecisions, SkewAggSuiteBase,
  SkewTestData, SpreadOverBuilds
}
import org.apache.spark.sql.skewagg.explain.SkewAggExplain

/**
 * Windows without PARTITION BY: Spark moves every row to one partition and runs the window in
 * one task; split by ranges of its order at run time (adaptive execution or not), exact.
 */
class GlobalWindowSplitSuite extends SkewAggSuiteBase with SpreadOverBuilds {

  private val conf = SkewTestData.conf ++ Seq(
    SkewAggConf.WINDOW_SPLIT_MIN_KEY_ROWS.key -> "100",
    SkewAggConf.WINDOW_SPLIT_SAMPLE_SIZE.key -> "2000",
    SkewAggConf.WINDOW_SPLIT_MAX_SPLITS.key -> "12")

  /**
   * `(o, i, t, v, d, f)` in 8 partitions: o unique; i with ties (0 to 96, null every 101st); t a
   * timestamp-like long with runs of 7 equal values; v a long; d a decimal; f a double with NaN,
   * -0.0, 0.0 and nulls.
   */
  private def table(s: SparkSession, rows: Int = 20000): DataFrame = {
    val id = col("id")
    s.range(0, rows, 1, 8).select(
      ((id * 104729) % rows).as("o"),
      when(id % 101 === 0, lit(null)).otherwise(id % 97).cast("int").as("i"),
      (((id * 7919) % rows) / 7).as("t"),
      when(id % 53 === 0, lit(null)).otherwise(id * 31 % 1000 - 400).as("v"),
      (id % 1000 / 8).cast("decimal(12,3)").as("d"),
      when(id % 89 === 3, lit(Double.NaN)).when(id % 13 === 1, lit(-0.0))
        .when(id % 13 === 2, lit(0.0)).when(id % 97 === 5, lit(null).cast("double"))
        .otherwise(floor(id / 3) % 50 - 10.5).as("f"))
  }

  /** `sql` over the table (of `rows` rows) as `t`. */
  private def queried(sql: String, rows: Int = 20000, extra: Seq[(String, String)] = Nil) =
    differential(
      s => { table(s, rows).createOrReplaceTempView("t"); s.sql(sql) },
      conf ++ extra: _*)

  private def windowed(select: String): Differential = queried(s"SELECT *, $select FROM t")

  private def splits(d: Differential, adaptive: Boolean): Seq[HotKeySplitWindowExec] =
    nodes[HotKeySplitWindowExec](d.plan(on = true, adaptive))

  /** The window split, with and without adaptive execution, into several ranges of its order. */
  private def assertSplit(d: Differential): Unit = for (adaptive <- Seq(true, false)) {
    val split = splits(d, adaptive)
    assert(split.size == 1, d.plan(on = true, adaptive))
    assert(split.head.partitionSpec.isEmpty)
    val decision = split.head.decision
    assert(
      decision.matches("no PARTITION BY: Spark runs the window in one task \\(.*, \\d+x the " +
        "per-slot share on 64 slots\\), read in \\d+ pieces \\(the split takes about [0-9.]+x of " +
        "Spark.s stage of .* on 64 slots: .*\\); the whole partition split by " +
        "(order|map-output piece \\(no order\\)) into \\d+ tasks.*"),
      decision)
    assert(!decision.contains("other keys"), decision)
    assert(split.head.metrics("splits").value >= 2, decision)
    assert(nodes[WindowExec](d.plan(on = true, adaptive)).isEmpty, d.plan(on = true, adaptive))
  }

  /** What the rule recorded about the windows of skewagg's adaptive plan. */
  private def windowDecisions(d: Differential): Seq[String] =
    nodes[WindowExec](d.plan(on = true, adaptive = true)).flatMap { w =>
      w.collect { case n => RecordedDecisions.of(n) }.flatten
    }.map(_.text).distinct

  test("ranking functions over a unique order, ascending and descending", EveryBuild) {
    for (order <- Seq("o", "o DESC")) {
      val w = s"(ORDER BY $order)"
      assertSplit(windowed(
        s"row_number() OVER $w AS rn, rank() OVER $w AS r, dense_rank() OVER $w AS dr, " +
          s"percent_rank() OVER $w AS pr, cume_dist() OVER $w AS cd, ntile(7) OVER $w AS nt, " +
          s"ntile(100000) OVER $w AS nt_many"))
    }
  }

  test("ties across cuts, nulls first and last, several order keys: peers in one range") {
    for (order <- Seq("i", "i DESC", "i ASC NULLS LAST", "i DESC NULLS FIRST, d", "t, i")) {
      val w = s"(ORDER BY $order)"
      assertSplit(windowed(
        s"rank() OVER $w AS r, dense_rank() OVER $w AS dr, percent_rank() OVER $w AS pr, " +
          s"cume_dist() OVER $w AS cd, sum(v) OVER $w AS s, count(*) OVER $w AS c, " +
          s"max(d) OVER $w AS hi, sum(d) OVER $w AS sd, avg(d) OVER $w AS ad"))
    }
  }

  test("running ROWS frames: sums, counts, min, max, decimal averages") {
    val rows = "(ORDER BY o ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
    assertSplit(windowed(
      s"sum(v) OVER $rows AS s, count(v) OVER $rows AS c, min(f) OVER $rows AS lo, " +
        s"max(i) OVER $rows AS hi, avg(d) OVER $rows AS a, sum(d) OVER $rows AS sd, " +
        "row_number() OVER (ORDER BY o) AS rn"))
  }

  test("lag and lead reaching across cuts, defaults, IGNORE NULLS", EveryBuild) {
    val w = "(ORDER BY o)"
    assertSplit(windowed(
      s"lag(v) OVER $w AS l1, lag(v, 3, -1) OVER $w AS l3, lead(v) OVER $w AS n1, " +
        s"lead(d, 5) OVER $w AS n5, lag(v) IGNORE NULLS OVER $w AS ln, " +
        s"lag(i, 40) IGNORE NULLS OVER $w AS ln40, lead(v) IGNORE NULLS OVER $w AS nn, " +
        s"lead(i, 3, -7) IGNORE NULLS OVER $w AS nn3"))
  }

  test("lead IGNORE NULLS over runs of nulls longer than a range, held in a spilling buffer") {
    // Runs of nulls longer than a range: lead IGNORE NULLS reads on into the ranges after it.
    val w = "(ORDER BY o)"
    val sparse = "CASE WHEN o % 1000 < 990 THEN NULL ELSE v END"
    val query = s"SELECT *, lead($sparse, 2) IGNORE NULLS OVER $w AS n2, lag($sparse, 2) " +
      s"IGNORE NULLS OVER $w AS l2, lead(v, 2) OVER $w AS plain FROM t"
    assertSplit(queried(query))
    // Spark's buffer spilling every 500 rows (its window's too): the split's rows read from disk.
    assertSplit(queried(
      query,
      extra = Seq(
        SQLConf.WINDOW_EXEC_BUFFER_IN_MEMORY_THRESHOLD.key -> "100",
        SQLConf.WINDOW_EXEC_BUFFER_SPILL_THRESHOLD.key -> "500")))
  }

  test("bounded ROWS frames: moving sums, averages, counts, extremes, frames ahead", EveryBuild) {
    def rows(frame: String) = s"(ORDER BY o ROWS BETWEEN $frame)"
    val last7 = rows("6 PRECEDING AND CURRENT ROW")
    val around = rows("3 PRECEDING AND 3 FOLLOWING")
    val ahead = rows("1 FOLLOWING AND 5 FOLLOWING")
    val behind = rows("10 PRECEDING AND 2 PRECEDING")
    assertSplit(queried(
      s"SELECT *, sum(v) OVER $last7 AS s7, avg(f) OVER $last7 AS a7, avg(v) OVER $around AS a, " +
        s"count(v) OVER $around AS c, min(f) OVER $ahead AS lo, max(d) OVER $behind AS hi, " +
        s"sum(d) OVER $ahead AS sd, first_value(v, true) OVER $behind AS fv, " +
        s"last_value(i) OVER $ahead AS lv, stddev(f) OVER $around AS sf, " +
        "row_number() OVER (ORDER BY o) AS rn, lag(v, 2) OVER (ORDER BY o) AS l, " +
        "sum(v) OVER (ORDER BY o) AS run FROM t",
      rows = 6000))
  }

  test("a bounded ROWS frame reaching across several ranges") {
    // 3000 rows in up to 12 ranges of about 250: each frame reaches into the ranges around it.
    val frame = "(ORDER BY o ROWS BETWEEN 600 PRECEDING AND 700 FOLLOWING)"
    assertSplit(queried(
      s"SELECT *, sum(v) OVER $frame AS s, count(*) OVER $frame AS c, max(f) OVER $frame AS m " +
        "FROM t",
      rows = 3000))
  }

  test("bounded RANGE frames: over ties and nulls, descending, ahead and behind") {
    // i has ties and nulls (a null's frame is the nulls); t runs of 7 equal values; o unique.
    for (order <- Seq("i", "i DESC NULLS LAST")) {
      def range(frame: String) = s"(ORDER BY $order RANGE BETWEEN $frame)"
      val back = range("3 PRECEDING AND CURRENT ROW")
      val around = range("2 PRECEDING AND 2 FOLLOWING")
      val ahead = range("1 FOLLOWING AND 4 FOLLOWING")
      val peers = range("CURRENT ROW AND CURRENT ROW")
      assertSplit(queried(
        s"SELECT *, sum(v) OVER $back AS s, count(*) OVER $around AS c, max(d) OVER $ahead AS " +
          s"hi, min(v) OVER $peers AS lo, avg(d) OVER $around AS ad, " +
          s"rank() OVER (ORDER BY $order) AS r, sum(v) OVER (ORDER BY $order) AS run FROM t",
        rows = 6000))
    }
    val byT = "(ORDER BY t RANGE BETWEEN 20 PRECEDING AND 10 FOLLOWING)"
    val byO = "(ORDER BY o DESC RANGE BETWEEN 40 PRECEDING AND 3 PRECEDING)"
    assertSplit(queried(s"SELECT *, sum(v) OVER $byT AS s FROM t", rows = 6000))
    assertSplit(
      queried(s"SELECT *, avg(f) OVER $byO AS a, stddev(f) OVER $byO AS sd FROM t", rows = 6000))
  }

  test(
    "bounded RANGE frames over dates and timestamps: intervals as Spark adds them",
    EveryBuild) {
    val days = "(ORDER BY day RANGE BETWEEN 3 PRECEDING AND CURRENT ROW)"
    val months = "(ORDER BY day RANGE BETWEEN INTERVAL '1' MONTH PRECEDING AND CURRENT ROW)"
    val hours =
      "(ORDER BY at RANGE BETWEEN INTERVAL '5' HOUR PRECEDING AND INTERVAL '2' HOUR FOLLOWING)"
    val legacy = "(ORDER BY at RANGE BETWEEN INTERVAL 1 DAY PRECEDING AND CURRENT ROW)"
    val columns = "FROM (SELECT *, date_add(DATE'2020-01-01', CAST(t / 20 AS INT)) AS day, " +
      "timestamp_seconds(CAST(t * 1800 AS BIGINT)) AS at FROM t)"
    assertSplit(queried(
      s"SELECT *, sum(v) OVER $days AS sd, count(*) OVER $months AS cm $columns",
      rows = 6000))
    assertSplit(queried(
      s"SELECT *, max(v) OVER $hours AS mh, sum(v) OVER $legacy AS sl $columns",
      rows = 6000))
    // A date and a day interval: Spark 4.0+ adds them; Spark 3.5's analyzer refuses the frame.
    val dayInterval = "SELECT *, sum(v) OVER (ORDER BY day RANGE BETWEEN INTERVAL '2' DAY " +
      s"PRECEDING AND CURRENT ROW) AS s $columns"
    val analyzed = scala.util.Try {
      table(spark, 10).createOrReplaceTempView("t")
      spark.sql(dayInterval).queryExecution.assertAnalyzed()
    }
    assert(analyzed.isSuccess || spark.version.startsWith("3."), analyzed)
    if (analyzed.isSuccess) assertSplit(queried(dayInterval, rows = 6000))
  }

  test("a bounded RANGE frame reaching across several ranges, or too far: Spark's window") {
    val frame = "(ORDER BY o RANGE BETWEEN 600 PRECEDING AND 700 FOLLOWING)"
    val query = s"SELECT *, sum(v) OVER $frame AS s, count(*) OVER $frame AS c FROM t"
    assertSplit(queried(query, rows = 3000))
    // At most 50 rows across an edge: the whole table runs in Spark's window, saying why.
    val tooFar = queried(
      query,
      rows = 3000,
      extra = Seq(SkewAggConf.WINDOW_SPLIT_MAX_RANGE_FRAME_ROWS.key -> "50"))
    for (adaptive <- Seq(true, false)) {
      val split = splits(tooFar, adaptive)
      assert(split.size == 1, tooFar.plan(on = true, adaptive))
      assert(
        split.head.decision.endsWith("; 1 key(s) in Spark's window: bounded RANGE frames " +
          "reaching more than 50 rows across a split's edge " +
          s"(${SkewAggConf.WINDOW_SPLIT_MAX_RANGE_FRAME_ROWS.key}), or bounds that wrap around"),
        split.head.decision)
    }
  }

  test("a RANGE bound that wraps around (integers near their largest): Spark's window") {
    // Without ANSI mode, x + 10 wraps past Int.MaxValue: the frames are whatever Spark's give.
    val wrapping = queried(
      "SELECT *, sum(v) OVER (ORDER BY x RANGE BETWEEN CURRENT ROW AND 10 FOLLOWING) AS s " +
        "FROM (SELECT *, CAST(2147483647 - o AS INT) AS x FROM t)",
      rows = 3000,
      extra = Seq(SQLConf.ANSI_ENABLED.key -> "false"))
    val split = splits(wrapping, adaptive = true)
    assert(split.size == 1)
    assert(split.head.decision.contains("1 key(s) in Spark's window"), split.head.decision)
  }

  test("first, last and nth values in running and whole frames") {
    val w = "(ORDER BY o)"
    val whole = "(ORDER BY o ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)"
    assertSplit(windowed(
      s"first_value(v) OVER $w AS fv, last_value(v) OVER $w AS lv, nth_value(v, 3) OVER $w " +
        s"AS n3, first_value(v, true) OVER $whole AS fw, last_value(f) OVER $whole AS lw, " +
        s"nth_value(i, 50) OVER $whole AS n50"))
  }

  test("whole-table aggregates without ORDER BY: the table's values on every row") {
    assertSplit(windowed(
      "sum(v) OVER () AS s, count(*) OVER () AS c, min(f) OVER () AS lo, max(d) OVER () AS hi, " +
        "sum(d) OVER () AS sd"))
  }

  test("a chain of windows, each by its own order") {
    val d = windowed(
      "row_number() OVER (ORDER BY o) AS rn, sum(v) OVER (ORDER BY t, o) AS run, " +
        "lag(d) OVER (ORDER BY i DESC NULLS LAST, o) AS l, rank() OVER (ORDER BY t) AS r")
    assertSplit(d)
    assert(splits(d, adaptive = true).head.windows.size >= 2)
    assert(
      splits(d, adaptive = true).head.decision.contains("then by the next window's order into"),
      splits(d, adaptive = true).head.decision)
  }

  test("one order value for every row: no range to split, Spark's window, exact") {
    val d = windowed(
      "row_number() OVER (ORDER BY c) AS rn, sum(v) OVER (ORDER BY c) AS s, " +
        "rank() OVER (ORDER BY c) AS r",
      "(SELECT *, 1 AS c FROM t)")
    for (adaptive <- Seq(true, false)) {
      val split = splits(d, adaptive)
      assert(split.size == 1 && split.head.metrics("splits").value == 0, split)
      assert(split.head.decision.contains("not split"), split.head.decision)
    }
  }

  test("a table its input wrote in two map tasks: a split would not pay, Spark's window") {
    // Each piece is a map output, half the table: the sample and the routing would each read
    // half of it in one task, longer together than Spark's one task.
    val d = windowed(
      "row_number() OVER (ORDER BY o) AS rn, sum(v) OVER (ORDER BY o) AS s",
      "(SELECT /*+ REPARTITION(2) */ * FROM t)")
    for (adaptive <- Seq(true, false)) {
      val split = splits(d, adaptive)
      assert(split.size == 1 && split.head.metrics("splits").value == 0, split)
      // The one partition is skewed, and said so, though the split would not pay.
      assert(split.head.metrics("skewedPartitions").value == 1, split)
      assert(
        split.head.decision.matches("no PARTITION BY: Spark runs the window in one task " +
          "\\(.*\\), left to Spark's window: the split would take about 1\\.\\d+x of Spark's " +
          "stage of .*"),
        split.head.decision)
      val text = SkewAggExplain.explain(d.plan(on = true, adaptive))
      assert(text.contains("  left alone when it ran: no PARTITION BY: Spark runs"), text)
      assert(!text.contains("rewritten:"), text)
    }
  }

  test("a whole-table aggregate beside ordered windows: one chain, every window split") {
    val d = windowed(
      "sum(v) OVER () AS total, row_number() OVER (ORDER BY o) AS rn, " +
        "v / sum(v) OVER () AS share, lag(v) OVER (ORDER BY o) AS prev")
    assertSplit(d)
  }

  private def windowed(select: String, from: String): Differential =
    queried(s"SELECT *, $select FROM $from")

  test("empty input and one row: Spark's window", EveryBuild) {
    for (rows <- Seq(0, 1)) {
      val d = queried(
        "SELECT *, row_number() OVER (ORDER BY o) AS rn, sum(v) OVER (ORDER BY o) AS s FROM t",
        rows)
      assert(splits(d, adaptive = true).isEmpty, d.plan(on = true, adaptive = true))
    }
  }

  test("a filter on the row number, and a top-N Spark limits per window") {
    for (limit <- Seq("rn <= 10", "rn = 15000", "r < 3")) {
      queried(
        "SELECT * FROM (SELECT *, row_number() OVER (ORDER BY o) AS rn, rank() OVER (ORDER BY " +
          s"t) AS r FROM t) WHERE $limit")
    }
    // One order: Spark limits the rows below the window, which is left alone, saying so.
    val limited = Seq(
      "rn <= 10" -> ("Spark keeps only the first 10 rows of the window's order below it " +
        "(TakeOrderedAndProject"),
      "r < 3" -> ("Spark keeps only the first 2 rows by rank on both sides of the window's " +
        "shuffle (WindowGroupLimit"))
    for ((limit, reason) <- limited) {
      val d = queried(
        "SELECT * FROM (SELECT *, row_number() OVER (ORDER BY o) AS rn, rank() OVER (ORDER BY " +
          s"o) AS r FROM t) WHERE $limit")
      assert(splits(d, adaptive = true).isEmpty)
      assert(windowDecisions(d).exists(_.contains(reason)), windowDecisions(d))
    }
  }

  test(
    "the explanation: no PARTITION BY, one task, split or left alone with the reason",
    EveryBuild) {
    val d = windowed("row_number() OVER (ORDER BY o) AS rn")
    for (adaptive <- Seq(true, false)) {
      val text = SkewAggExplain.explain(d.plan(on = true, adaptive))
      assert(text.contains("window 1: PARTITION BY : rn\n  rewritten: "), text)
      assert(text.contains("no PARTITION BY: Spark runs the window in one task"), text)
      assert(!text.contains("not skewed"), text)
    }
    // On the 2 slots of this machine the one task is not 5x an even share: left alone, saying so.
    val onTwo = queried(
      "SELECT *, row_number() OVER (ORDER BY o) AS rn FROM t",
      extra = Seq(SkewAggConf.SKEW_TASK_SLOTS.key -> "2"))
    assert(splits(onTwo, adaptive = true).isEmpty)
    assert(
      windowDecisions(onTwo).exists(_.matches(
        "left alone: the window has no PARTITION BY: Spark runs it in one task of .*, left " +
          "there: not more than 5.0x the per-slot share .* on 2 task slots .*would not pay\\.")),
      windowDecisions(onTwo))
    val text = SkewAggExplain.explain(onTwo.plan(on = true, adaptive = true))
    assert(!text.contains("not skewed"), text)
  }

  test("refused with the reason: frames and functions that are not split") {
    val refusals = Seq(
      "sum(v) OVER (ORDER BY o RANGE BETWEEN 2 PRECEDING AND UNBOUNDED FOLLOWING)" ->
        "ROWS or RANGE frames bounded on both sides are",
      "sum(v) OVER (ORDER BY o ROWS BETWEEN 1001 PRECEDING AND CURRENT ROW)" ->
        "a ROWS frame reaching more than 1000 rows is not",
      "sum(v) OVER (ORDER BY o ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)" ->
        "is not split")
    for ((function, reason) <- refusals) {
      val d = queried(s"SELECT *, $function AS x FROM t", rows = 3000)
      assert(splits(d, adaptive = true).isEmpty)
      assert(windowDecisions(d).exists(_.contains(reason)), windowDecisions(d))
    }
    // Spark's segment tree (4.2+, opt-in) merges a moving frame's blocks in its own order.
    val tree = queried(
      "SELECT *, sum(v) OVER (ORDER BY o ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) AS x FROM t",
      rows = 3000,
      extra = Seq("spark.sql.window.segmentTree.enabled" -> "true"))
    assert(splits(tree, adaptive = true).isEmpty)
    assert(
      windowDecisions(tree).exists(_.contains("Spark aggregates bounded frames by a segment tree")),
      windowDecisions(tree))
  }

  test("a global aggregate above: split, its partial aggregates gathered", EveryBuild) {
    val d = queried(
      "SELECT max(rn), sum(s), count(*) FROM (SELECT row_number() OVER (ORDER BY o) AS rn, " +
        "sum(v) OVER (ORDER BY o) AS s FROM t)")
    assertSplit(d)
    for (adaptive <- Seq(true, false)) {
      val plan = d.plan(on = true, adaptive)
      assert(nodes[ShuffleExchangeLike](plan).exists(CheapExchanges.isCheapExchange), plan)
    }
  }

  test("a window without PARTITION BY over a filter of the split one: left alone, saying why") {
    val d = queried(
      "SELECT *, sum(v) OVER (ORDER BY o) AS s FROM (SELECT *, row_number() OVER (ORDER BY o) " +
        "AS rn FROM t) WHERE rn > 3")
    assert(splits(d, adaptive = true).isEmpty, d.plan(on = true, adaptive = true))
    assert(
      windowDecisions(d).exists(_.contains("relies on the window's output being one partition")),
      windowDecisions(d))
  }
}
