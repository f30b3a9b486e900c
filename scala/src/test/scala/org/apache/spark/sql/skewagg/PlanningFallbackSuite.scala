package org.apache.spark.sql.skewagg

import org.scalatest.BeforeAndAfterAll

import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.explain.SkewAggExplain

import SkewTestData._

/**
 * A skewagg planning step that throws leaves the query to Spark's plan for that step: the
 * query returns vanilla's rows, and `skewagg.explain` says which step fell back. Each step is
 * made to throw by the test-only `spark.skewagg.test.failRule`. (A hint naming a missing column
 * stays an analysis error through the guard: LocalAggregateBeforeJoinSuite.)
 */
class PlanningFallbackSuite extends SkewAggSuiteBase with SpreadOverBuilds with BeforeAndAfterAll {

  override def beforeAll(): Unit = {
    super.beforeAll()
    fact(spark, skewed = true).createOrReplaceTempView("fallback_fact")
    dim(spark).createOrReplaceTempView("fallback_dim")
    spark.sql("DROP TABLE IF EXISTS fallback_bucketed")
    fact(spark, skewed = true).write.bucketBy(8, "k").format("parquet")
      .saveAsTable("fallback_bucketed")
  }

  override def afterAll(): Unit = {
    spark.sql("DROP TABLE IF EXISTS fallback_bucketed")
    super.afterAll()
  }

  /** One query with every shape a skewagg step rewrites, and a hint for the analysis rules. */
  private val everyShape =
    """SELECT /*+ SKEW_AGG(k) */ f.k, sum(f.v) AS s FROM fallback_fact f
      |JOIN fallback_dim d ON f.k = d.k GROUP BY f.k
      |UNION ALL
      |SELECT k, sum(v) FROM (SELECT /*+ REPARTITION(k) */ * FROM fallback_fact) GROUP BY k
      |UNION ALL
      |SELECT k, percentile(v, 0.5) FROM fallback_fact GROUP BY k
      |UNION ALL
      |SELECT k, sum(v) FROM fallback_bucketed GROUP BY k
      |UNION ALL
      |SELECT k, sum(v) OVER (PARTITION BY k) FROM fallback_fact""".stripMargin

  /**
   * Each registered step, and whether it runs only under adaptive execution (a rule also run
   * before columnar transitions runs without it: one step name for both).
   */
  private val steps = Seq(
    "ResolveSkewAggHints" -> false,
    "RestoreSkewAggHints" -> false,
    "CheckSkewAggHints" -> false,
    "WarnUnknownSkewAggSettings" -> false,
    "LocalAggregateBeforeJoin" -> false,
    "PlanPartialAggregates" -> false,
    "PartialAggregateBeforeRepartition" -> false,
    "PlanHolisticAggregatesSortBased" -> false,
    "BroadcastJoinBelowLocalAggregate" -> true,
    "SplitSkewedShuffleBelowAggregate" -> true,
    "SplitSkewedJoinBelowAggregate" -> true,
    "SplitSkewedBucketsBelowAggregate" -> false,
    "SplitMergeOfPartialStates" -> true,
    "SplitSkewedWindow" -> false,
    "CoalescePartialResultExchanges" -> true,
    "DropUnneededMergeAfterShuffle" -> true,
    "LeftAloneReasons" -> false)

  private val everyShapeConf = conf :+ (SQLConf.BUCKETING_ENABLED.key -> "true")

  /** The query's rows and plans with skewagg off, run once for every step's test. */
  private lazy val vanilla = differential(s => s.sql(everyShape), everyShapeConf: _*)

  for ((step, adaptiveOnly) <- steps) {
    // Hints resolve in another phase on Spark 3.5 (HintResolutionPhase): on every build.
    val builds = if (step == "ResolveSkewAggHints") Seq(EveryBuild) else Nil
    test(s"$step throws: the query succeeds with vanilla's rows, and explain says so", builds: _*) {
      // Run (once) before counting: the vanilla reference must not fall back itself.
      val reference = vanilla
      val before = PlanningFallback.count
      val d = differentialAgainst(
        reference,
        s => s.sql(everyShape),
        everyShapeConf :+ (SkewAggConf.TEST_FAIL_RULE.key -> step): _*)
      assert(PlanningFallback.count > before)
      for (adaptive <- if (adaptiveOnly) Seq(true) else Seq(false, true)) {
        val text = SkewAggExplain.explain(d.plan(on = true, adaptive))
        assert(text.contains(s"fallback: $step failed while planning"), text)
      }
    }
  }
}
