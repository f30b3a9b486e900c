package org.apache.spark.sql.skewagg.window

import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.skewagg.{
  Differential, EveryBuild, LineFeatures, SinceSpark40, SkewAggConf, RecordedDecisions,
  SkewAggSuiteBase, SpreadOverBuilds
}

/**
 * Windows the optimizer builds over a hot key (issue 41): Spark decorrelates a LIMIT in a
 * LATERAL, EXISTS, IN or scalar subquery into `row_number()` over the correlated columns (without
 * ORDER BY, a running frame no user can write) under a filter; a window group limit; an
 * aggregate's running frame without ORDER BY. Each query runs differentially with the window
 * thresholds lowered (the hot key splits) and with the defaults.
 */
class OptimizerBuiltWindowSuite extends SkewAggSuiteBase with SpreadOverBuilds {

  /** The settings of issue 41's run: every hot key of one row splits. */
  private val issueSettings = Seq(
    SQLConf.SHUFFLE_PARTITIONS.key -> "4",
    SQLConf.AUTO_BROADCASTJOIN_THRESHOLD.key -> "-1",
    SQLConf.OPTIMIZER_EXCLUDED_RULES.key ->
      "org.apache.spark.sql.catalyst.optimizer.ConvertToLocalRelation",
    SkewAggConf.SKEW_FACTOR.key -> "1.0",
    SkewAggConf.SKEW_MIN_PARTITION_SIZE.key -> "0b",
    SkewAggConf.SKEW_MIN_SPLIT_SIZE.key -> "1b",
    SkewAggConf.SKEW_TASK_SLOTS.key -> "64",
    SkewAggConf.WINDOW_SPLIT_MIN_KEY_ROWS.key -> "1",
    SkewAggConf.WINDOW_SPLIT_SAMPLE_FRACTION.key -> "1.0",
    SkewAggConf.WINDOW_SPLIT_MAX_SPLITS.key -> "4")

  /**
   * The same in 16 partitions: a key is hot when it holds more than a partition's rows, and the
   * windows over domain joins have four hot keys.
   */
  private val lowered = issueSettings :+ (SQLConf.SHUFFLE_PARTITIONS.key -> "16")

  private val defaults = Seq(
    SQLConf.SHUFFLE_PARTITIONS.key -> "4",
    SQLConf.AUTO_BROADCASTJOIN_THRESHOLD.key -> "-1")

  /**
   * `t(k, o, v)`, 4000 rows in 16 partitions: half on key 0, the rest over 50 keys; o unique, v
   * with ties (0 to 19). `d(k, c)`: keys 0 to 9 and a null, c from 0 to 3. (A hot key's rows in
   * 4 map outputs would be routed in quarters, a split that does not pay.)
   */
  private def tables(s: SparkSession): Unit = {
    val id = col("id")
    s.range(0, 4000, 1, 16).select(
      when(id % 2 === 0, lit(0L)).otherwise(id % 50 + 1).as("k"),
      ((id * 7919) % 4000).as("o"),
      (id % 20).cast("int").as("v")).createOrReplaceTempView("t")
    s.sql("SELECT * FROM VALUES (0L, 0), (1L, 1), (2L, 3), (3L, 2), (4L, 0), (5L, 1), (6L, 2), " +
      "(7L, 3), (8L, 0), (9L, 1), (CAST(NULL AS BIGINT), 2) AS d(k, c)")
      .createOrReplaceTempView("d")
  }

  private def queried(sql: String, conf: Seq[(String, String)]): Differential =
    differential(s => { tables(s); s.sql(sql) }, conf: _*)

  /** The splits that split a hot key in skewagg's plans of `d` (adaptive execution on, off). */
  private def hotKeysSplit(d: Differential, adaptive: Boolean): Seq[HotKeySplitWindowExec] =
    nodes[HotKeySplitWindowExec](d.plan(on = true, adaptive)).filter(_.metrics("hotKeys").value > 0)

  /** What skewagg decided in the plan of `d` (adaptive execution `adaptive`), and why. */
  private def decisions(d: Differential, adaptive: Boolean): String = {
    val plan = d.plan(on = true, adaptive)
    val recorded = nodes[SparkPlan](plan).flatMap(_.collect { case n => RecordedDecisions.of(n) })
      .flatten.map(_.text)
    val splits = nodes[HotKeySplitWindowExec](plan).map(_.decision)
    (recorded ++ splits).distinct.mkString("\n") + s"\n$plan"
  }

  private val LimitsRefused =
    "Spark 3.5 refuses a correlated subquery with LIMIT, with or without skewagg"

  private val arrivalOrder = "without ORDER BY it reads the rows in the order they arrive"

  /** What a query's window gets with the thresholds lowered. */
  private sealed trait Expected

  /** A hot key split. */
  private case object Split extends Expected

  /** Refused: a window without ORDER BY that reads the order rows arrive in. */
  private case object ArrivalOrder extends Expected

  /** Spark's plan for another reason, recorded with `reason` in it. */
  private case class SparksPlan(reason: String) extends Expected

  /** A window group limit below the window: Spark limits each key's rows before its shuffle. */
  private val GroupLimit = SparksPlan("(WindowGroupLimit, from a filter on it)")

  /** A join above reads the window's partitioning. */
  private val PartitionedAbove =
    SparksPlan("a node above relies on the window's output being partitioned by its keys")

  /** `sql` returns Spark's rows with the thresholds lowered and by default, as `expected`. */
  private def assertExact(sql: String, expected: Expected): Unit = {
    val d = queried(sql, lowered)
    for (adaptive <- Seq(true, false)) {
      val split = hotKeysSplit(d, adaptive).nonEmpty
      assert(split == (expected == Split), s"$sql\n${decisions(d, adaptive)}")
    }
    expected match {
      case ArrivalOrder =>
        assert(decisions(d, adaptive = true).contains(arrivalOrder), decisions(d, adaptive = true))
      case SparksPlan(reason) =>
        assert(decisions(d, adaptive = true).contains(reason), decisions(d, adaptive = true))
      case Split =>
    }
    queried(sql, defaults)
  }

  test(
    "issue 41's reproduction: LATERAL ... LIMIT 1 without ORDER BY keeps Spark's window",
    SinceSpark40) {
    assume(LineFeatures.correlatedLimits, LimitsRefused)
    val query = "select * from t1 join lateral " +
      "(select * from t2 where t1.c1 = t2.c1 and t1.c2 < t2.c2 limit 1)"
    for (conf <- Seq(issueSettings, defaults)) {
      val d = differential(
        s => {
          s.sql("create or replace temp view t1(c1, c2) as values (0, 1), (1, 2)")
          s.sql("create or replace temp view t2(c1, c2) as values (0, 2), (0, 3)")
          s.sql(query)
        },
        conf: _*)
      assert(d.rows.size == 1)
      if (conf == issueSettings) {
        assert(decisions(d, adaptive = true).contains(arrivalOrder), decisions(d, true))
      }
    }
  }

  test("LATERAL with LIMIT, with and without ORDER BY, with OFFSET", SinceSpark40) {
    assume(LineFeatures.correlatedLimits, LimitsRefused)
    // Without ORDER BY: only what the correlation fixes (the key, and how many rows).
    assertExact(
      "SELECT d.k, d.c, l.k2 FROM d JOIN LATERAL (SELECT t.k AS k2 FROM t WHERE t.k = d.k " +
        "LIMIT 1) l",
      ArrivalOrder)
    assertExact(
      "SELECT d.k, d.c, count(*) AS n, min(l.o >= 0) AS o FROM d JOIN LATERAL (SELECT t.o " +
        "FROM t WHERE t.k = d.k AND t.v > d.c LIMIT 7) l GROUP BY d.k, d.c",
      ArrivalOrder)
    assertExact(
      "SELECT d.k, d.c, count(*) AS n, min(l.o >= 0) AS o FROM d JOIN LATERAL (SELECT t.o " +
        "FROM t WHERE t.v > d.c LIMIT 700) l GROUP BY d.k, d.c",
      ArrivalOrder)
    assertExact(
      "SELECT d.k, d.c, l.* FROM d JOIN LATERAL (SELECT t.o, t.v FROM t WHERE t.k = d.k " +
        "AND t.v > d.c ORDER BY t.o DESC LIMIT 2 OFFSET 1) l",
      GroupLimit)
    assertExact(
      "SELECT d.k, d.c, l.* FROM d, LATERAL (SELECT t.o, t.v FROM t WHERE t.k = d.k " +
        "AND t.v >= d.c ORDER BY t.v, t.o LIMIT 3) l",
      GroupLimit)
  }

  test(
    "LATERAL correlated only in its select list, shuffled hash joins, no codegen",
    SinceSpark40) {
    assume(LineFeatures.correlatedLimits, LimitsRefused)
    // Issue 41's `LEFT JOIN int8_tbl i8 ON i8.q2 = 123, LATERAL (SELECT i8.q1, t2.f1 FROM
    // text_tbl t2 LIMIT 1)`: the window partitions the outer column's values.
    withSQLConf(
      SQLConf.PREFER_SORTMERGEJOIN.key -> "false",
      SQLConf.WHOLESTAGE_CODEGEN_ENABLED.key -> "false") {
      assertExact(
        "SELECT d.k, e.k AS ek, l.* FROM d LEFT JOIN d e ON e.c = 3, LATERAL (SELECT e.k AS k2, " +
          "t.k = t.k AS known FROM t LIMIT 1) l",
        ArrivalOrder)
    }
  }

  test("EXISTS, IN and scalar subqueries with LIMIT, correlated by equality or not", SinceSpark40) {
    assume(LineFeatures.correlatedLimits, LimitsRefused)
    assertExact(
      "SELECT * FROM d WHERE EXISTS (SELECT t.o FROM t WHERE t.k = d.k AND t.v > d.c LIMIT 1)",
      ArrivalOrder)
    assertExact(
      "SELECT * FROM d WHERE NOT EXISTS (SELECT t.o FROM t WHERE t.k = d.k LIMIT 1 OFFSET 2)",
      ArrivalOrder)
    // ORDER BY a column not selected: the sort stays below the window, which has no order.
    assertExact(
      "SELECT * FROM d WHERE d.c IN (SELECT t.v FROM t WHERE t.k = d.k ORDER BY t.o LIMIT 10)",
      ArrivalOrder)
    assertExact(
      "SELECT d.k, d.c, (SELECT t.o FROM t WHERE t.v < d.c + 10 ORDER BY t.v, t.o LIMIT 1) " +
        "AS o FROM d",
      ArrivalOrder)
    assertExact(
      "SELECT d.k, (SELECT t.o FROM t WHERE t.k = d.k ORDER BY t.o LIMIT 1) AS first_o FROM d",
      GroupLimit)
    assertExact(
      "SELECT * FROM d WHERE EXISTS (SELECT t.o FROM t WHERE t.k > d.k LIMIT 1)",
      ArrivalOrder)
  }

  test("window group limits and filters on a window's result") {
    assertExact(
      "SELECT * FROM (SELECT t.*, rank() OVER (PARTITION BY k ORDER BY v) AS r FROM t) " +
        "WHERE r <= 2",
      GroupLimit)
    assertExact(
      "SELECT * FROM (SELECT t.*, row_number() OVER (PARTITION BY k ORDER BY o DESC) AS r " +
        "FROM t) WHERE r = 1",
      GroupLimit)
    assertExact(
      "SELECT * FROM (SELECT t.*, max(v) OVER (PARTITION BY k) AS m FROM t) WHERE v = m",
      Split)
  }

  test("without ORDER BY, running frames keep Spark's window") {
    // Each key's running count takes every value from 1 to its rows, in some order.
    assertExact(
      "SELECT count(*) AS c, sum(s) AS total, count(CASE WHEN s <= 3 THEN 1 END) AS low, " +
        "max(s) AS high, sum(o) AS o FROM (SELECT k, o, count(*) OVER (PARTITION BY k ROWS " +
        "BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS s FROM t)",
      ArrivalOrder)
    for (function <- Seq("first_value(o)", "last_value(o)")) {
      assertExact(
        s"SELECT count(*), sum(f) FROM (SELECT $function OVER (PARTITION BY k ROWS BETWEEN " +
          "UNBOUNDED PRECEDING AND CURRENT ROW) AS f FROM t WHERE o = 7 OR k > 0)",
        ArrivalOrder)
    }
  }

  test(
    "a window planned split but run with settings that refuse it runs Spark's window",
    EveryBuild) {
    val floatingPoint = SkewAggConf.WINDOW_SPLIT_FLOATING_POINT_ENABLED.key
    // Doubles holding small integers: every order of addition gives the same sums.
    val sql = "SELECT k, o, sum(CAST(v AS DOUBLE)) OVER (PARTITION BY k ORDER BY o ROWS BETWEEN " +
      "UNBOUNDED PRECEDING AND CURRENT ROW) AS s FROM t"
    withSQLConf(lowered ++ Seq(
      SkewAggConf.ENABLED.key -> "true",
      SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> "false",
      floatingPoint -> "true"): _*) {
      tables(spark)
      val plan = spark.sql(sql).queryExecution.executedPlan
      val split = nodes[HotKeySplitWindowExec](plan).head
      val types = split.output.map(_.dataType)
      def rows(p: SparkPlan) = p.executeCollect().map(_.toSeq(types).mkString(",")).sorted.toSeq
      val splitRows = rows(split)
      assert(split.metrics("hotKeys").value > 0, plan)
      withSQLConf(floatingPoint -> "false") {
        // A copy reads the settings again, as an operator planned before the change would.
        val again = split.copy()
        assert(rows(again) == splitRows)
        assert(
          again.decision.startsWith("Spark's window: ") && again.decision.contains(floatingPoint),
          again.decision)
      }
    }
  }
}
