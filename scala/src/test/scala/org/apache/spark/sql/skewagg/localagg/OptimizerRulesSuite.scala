package org.apache.spark.sql.skewagg.localagg

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.plans.logical.Aggregate
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.joins.ShuffledJoin
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  Differential, EveryBuild, PartialAggregates, SessionStates, SkewAggConf, SkewAggSuiteBase,
  SkewTestData, SpreadOverBuilds
}

/**
 * The join rewrite under Spark's optimizer: shapes that optimizer rules rewrite (narrow decimals
 * by DecimalAggregates, foldable and literal grouping keys by FoldablePropagation, the domain
 * joins and null-safe keys of decorrelated LATERAL subqueries) give vanilla's rows, and no
 * optimizer rule ever sees skewagg's partial and final halves.
 */
class OptimizerRulesSuite extends SkewAggSuiteBase with SpreadOverBuilds {

  /** The settings of the corpus run that found the LATERAL failures (issue 23). */
  private val corpusConf = Seq(
    SQLConf.AUTO_BROADCASTJOIN_THRESHOLD.key -> "-1",
    SQLConf.OPTIMIZER_EXCLUDED_RULES.key ->
      "org.apache.spark.sql.catalyst.optimizer.ConvertToLocalRelation",
    SQLConf.SHUFFLE_PARTITIONS.key -> "4",
    SQLConf.ANSI_ENABLED.key -> "true",
    SkewAggConf.SKEW_FACTOR.key -> "1.0",
    SkewAggConf.SKEW_MIN_PARTITION_SIZE.key -> "0b",
    SkewAggConf.SKEW_MIN_SPLIT_SIZE.key -> "1b",
    SkewAggConf.LOCAL_AGGREGATE_CAPACITY.key -> "16")

  private def sql(text: String): SparkSession => DataFrame = s => s.sql(text)

  /** A join whose subtree aggregates partially before the join's input. */
  private def aggregatesBeforeJoin(plan: SparkPlan): Boolean = nodes[ShuffledJoin](plan)
    .exists(_.children.exists(c => find(c)(PartialAggregates.isPartial).isDefined))

  private def assertLocal(d: Differential): Unit = for (adaptive <- Seq(false, true)) {
    assert(aggregatesBeforeJoin(d.plan(on = true, adaptive)), d.plan(on = true, adaptive))
  }

  private def createLateralTables(): Unit = {
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW t1(c1, c2) AS VALUES (0, 1), (1, 2)")
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW t2(c1, c2) AS VALUES (0, 2), (0, 3)")
    spark.sql(
      "CREATE OR REPLACE TEMPORARY VIEW t4(c1, c2) AS VALUES (0, 1), (0, 2), (1, 1), (1, 3)")
  }

  test("issue 23: sum of a narrow decimal above a shuffled join (DecimalAggregates)") {
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW a(k, v) AS VALUES (1, 1.5), (1, 2.5), (2, 3.0)")
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW b(k) AS VALUES (1), (2)")
    val d = differential(
      sql("SELECT a.k, sum(a.v) FROM a JOIN b ON a.k = b.k GROUP BY a.k"),
      corpusConf: _*)
    assert(d.rows.map(r => (r.getInt(0), r.getDecimal(1).doubleValue)).toSet ==
      Set((1, 4.0), (2, 3.0)))
    assertLocal(d)
  }

  test("issue 23: COUNT over a join with a decorrelated scalar subquery in LATERAL") {
    createLateralTables()
    val d = differential(
      sql("""SELECT * FROM t1, LATERAL (SELECT COUNT(*) FROM
      |(SELECT COUNT(*) cnt FROM t2 WHERE t1.c1 = t2.c1) JOIN t2 ON cnt = t2.c1)""".stripMargin),
      corpusConf: _*)
    assert(d.rows.size == 2)
  }

  test("issue 23: sum over a null-safe LEFT SEMI JOIN in LATERAL") {
    createLateralTables()
    val d = differential(
      sql("""SELECT * FROM t1 JOIN LATERAL (SELECT sum(c1) FROM
      |(SELECT * FROM t2 WHERE t2.c1 <= t1.c1) lhs LEFT SEMI JOIN (SELECT * FROM t4) rhs
      |ON lhs.c1 <=> rhs.c1 AND lhs.c2 <=> rhs.c2)""".stripMargin),
      corpusConf: _*)
    assert(d.rows.size == 2)
  }

  /** `fact_dec(k, d1 .. d38)`: column `dP` is DECIMAL(P, P / 2); `dim_dec(k)`. */
  private def createDecimalTables(): Unit = {
    val columns = (1 to 38).map(p => s"CAST((id % 7) / 2 AS DECIMAL($p, ${p / 2})) AS d$p")
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW fact_dec AS SELECT " +
      s"CASE WHEN id % 3 = 0 THEN 0 ELSE id % 50 END AS k, ${columns.mkString(", ")} " +
      "FROM range(0, 2000, 1, 4)")
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW dim_dec AS SELECT id AS k, id % 4 AS attr " +
      "FROM range(0, 60)")
  }

  private def decimalAggregates(precisions: Range): String =
    precisions.flatMap(p => Seq(s"sum(f.d$p)", s"avg(f.d$p)")).mkString(", ")

  // Without the hint, only precisions whose sums keep at most 18 digits (a long in a row) are
  // aggregated before the join; wider ones are left alone (LocalAggregateBeforeJoinSuite).
  for ((join, hint, precisions) <- Seq(
      ("JOIN", "/*+ SKEW_AGG */ ", 1 to 38),
      ("LEFT JOIN", "/*+ SKEW_AGG */ ", 1 to 38),
      ("LEFT SEMI JOIN", "/*+ SKEW_AGG */ ", 1 to 38),
      ("JOIN", "", 1 to 8),
      ("LEFT JOIN", "", 1 to 8))) {
    test(s"sum and avg of every decimal precision ${precisions.head}..${precisions.last} over " +
      (s"$join " + hint.trim).trim) {
      createDecimalTables()
      val d = differential(
        sql(s"SELECT $hint f.k, ${decimalAggregates(precisions)} " +
          s"FROM fact_dec f $join dim_dec g ON f.k = g.k GROUP BY f.k"),
        SkewTestData.conf: _*)
      assert(d.rows.size == 50)
      assertLocal(d)
    }
  }

  test("literal, foldable and computed grouping keys above a join") {
    createDecimalTables()
    val queries = Seq(
      s"SELECT f.k, 'x' AS tag, sum(f.d5), avg(f.d8) FROM fact_dec f JOIN dim_dec g " +
        "ON f.k = g.k GROUP BY f.k, 'x'",
      "SELECT 'all' AS scope, sum(f.d3), count(*) FROM fact_dec f JOIN dim_dec g ON f.k = g.k " +
        "GROUP BY 'all'",
      "WITH c AS (SELECT 5 AS five, k, d4 FROM fact_dec) SELECT five, c.k, sum(d4), avg(d4) " +
        "FROM c JOIN dim_dec g ON c.k = g.k GROUP BY five, c.k",
      "SELECT f.k + 1, sum(f.d8) FROM fact_dec f JOIN dim_dec g ON f.k = g.k GROUP BY f.k + 1",
      "SELECT f.k, sum(f.d2) FROM fact_dec f JOIN dim_dec g ON f.k <=> g.k GROUP BY f.k")
    val runs = queries.map(q => differential(sql(q), corpusConf: _*))
    // Spark drops the literal keys of the first and third (RemoveLiteralFromGroupExpressions,
    // after FoldablePropagation): both rewritten, the literal computed above the final aggregate.
    assertLocal(runs(0))
    assertLocal(runs(2))
  }

  test(
    "no skewagg rule runs in Spark's optimizer, so no optimizer rule reads its halves",
    EveryBuild) {
    val optimizer = SessionStates.of(spark).optimizer
    val ours = optimizer.batches.flatMap(_.rules).map(_.getClass.getName)
      .filter(n => n.startsWith("org.apache.spark.sql.skewagg.") || n.startsWith("io.skewagg."))
    assert(ours.isEmpty)
    // And after every batch, the optimized plan of a rewritten query is Spark's own: the rewrite
    // happens while it is planned.
    createDecimalTables()
    val df = spark.sql("SELECT /*+ SKEW_AGG */ f.k, sum(f.d3) FROM fact_dec f " +
      "JOIN dim_dec g ON f.k = g.k GROUP BY f.k")
    withSQLConf(SkewTestData.conf: _*) {
      val optimized = df.queryExecution.optimizedPlan
      assert(optimized.collect { case p: PartialAggregate => p }.isEmpty)
      assert(optimized.collect { case a: Aggregate => a }.nonEmpty)
      assert(aggregatesBeforeJoin(df.queryExecution.executedPlan))
    }
  }
}
