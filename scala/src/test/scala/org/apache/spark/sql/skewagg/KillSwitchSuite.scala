package org.apache.spark.sql.skewagg

import org.scalatest.BeforeAndAfterAll

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf

/**
 * `spark.skewagg.enabled=false` gives exactly the plan of a session without the extension, for
 * the rule suites' query shapes below. The fuzz corpus checks the same for every case it runs
 * (joins of every type, repartitions, bucketed tables, subqueries, holistic and DISTINCT
 * aggregates, windows, hints, AQE and ANSI on and off), switched off at run time in the session
 * where the case just ran with skewagg on ([[org.apache.spark.sql.skewagg.fuzz.FuzzRunner]]).
 */
class KillSwitchSuite extends SkewAggSuiteBase with BeforeAndAfterAll {

  /** The shared vanilla session's settings before the tests (the fuzz runner reuses it). */
  private var vanillaSettings = Map.empty[String, String]

  override def beforeAll(): Unit = {
    super.beforeAll()
    vanillaSettings = SharedSkewAggSession.vanilla.conf.getAll
  }

  private def fact(s: SparkSession): DataFrame =
    s.range(0, 2000).select((col("id") % 13).as("k"), col("id").cast("double").as("v"))

  private val queries: Seq[(String, SparkSession => DataFrame)] = Seq(
    "repartition + groupBy" ->
      (s => fact(s).repartition(col("k")).groupBy("k").agg(sum("v")).hint("skew_agg")),
    "repartition(n) + distinct" -> (s =>
      fact(s).repartition(5, col("k")).groupBy("k")
        .agg(countDistinct("v"), max("v")).hint("skew_agg")),
    "join + groupBy" -> (s =>
      fact(s).join(fact(s).select(col("k"), col("v").as("w")), "k")
        .groupBy("k").agg(sum("v"))),
    "plain groupBy" -> (s => fact(s).groupBy("k").agg(avg("v"))),
    "hinted join + groupBy" -> (s =>
      fact(s).join(fact(s).select(col("k"), col("v").as("w")), "k")
        .groupBy("k").agg(sum("v")).hint("skew_agg")))

  private def plannedWith(s: SparkSession, query: SparkSession => DataFrame): SparkPlan =
    query(s).queryExecution.executedPlan match {
      case a: AdaptiveSparkPlanExec => a.initialPlan
      case p => p
    }

  /**
   * Equal canonical plans, or canonical plans equal but for expression ids: Spark 4.3's fused
   * (Complete-mode) aggregates keep their result attributes' ids through canonicalization, so
   * two plannings of one query differ in them.
   */
  private def samePlanUpToIds(a: SparkPlan, b: SparkPlan): Boolean =
    a.canonicalized == b.canonicalized || shape(a.canonicalized) == shape(b.canonicalized)

  for ((name, query) <- queries; adaptive <- Seq(false, true)) {
    test(s"$name, adaptive=$adaptive: skewagg off plans exactly like vanilla Spark") {
      val vanilla = SharedSkewAggSession.vanilla
      val conf = Seq(
        SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> adaptive.toString,
        SQLConf.AUTO_BROADCASTJOIN_THRESHOLD.key -> "-1")
      // (The vanilla session is shared, with the fuzz runner too: its settings are restored.)
      val expected = ConfScopes.restoring(vanilla.conf, conf.map(_._1)) {
        conf.foreach { case (k, v) => vanilla.conf.set(k, v) }
        plannedWith(vanilla, query)
      }
      withSQLConf(conf :+ (SkewAggConf.ENABLED.key -> "false"): _*) {
        val actual = plannedWith(spark, query)
        // Compared as a Boolean: ScalaTest's object diff of plans would evaluate lazy fields.
        val samePlan = samePlanUpToIds(actual, expected)
        assert(samePlan, s"\nskewagg off:\n$actual\nvanilla:\n$expected")
      }
      // And the switch is not vacuous: with skewagg on, the repartition queries plan differently.
      if (name.startsWith("repartition") || name.startsWith("hinted")) {
        withSQLConf(conf: _*) {
          val changed = !samePlanUpToIds(plannedWith(spark, query), expected)
          assert(changed)
        }
      }
    }
  }

  test("the shared vanilla session keeps the settings it had before these tests") {
    assert(SharedSkewAggSession.vanilla.conf.getAll == vanillaSettings)
  }
}
