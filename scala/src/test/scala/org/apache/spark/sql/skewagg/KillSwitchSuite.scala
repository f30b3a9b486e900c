package org.apache.spark.sql.skewagg

import scala.util.control.NonFatal

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.fuzz.{FuzzCase, FuzzGenerator, FuzzRunner}

/**
 * `spark.skewagg.enabled=false` gives exactly the plan of a session without the extension: for
 * the rule suites' query shapes below, and for the randomized differential corpus (joins of every
 * type, repartitions, bucketed tables, subqueries, holistic and DISTINCT aggregates, hints, AQE
 * and ANSI on and off), switched off at run time in the session where the query just ran with
 * skewagg on.
 */
class KillSwitchSuite extends SkewAggSuiteBase {

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
      conf.foreach { case (k, v) => vanilla.conf.set(k, v) }
      val expected = plannedWith(vanilla, query)
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

  private val CorpusSeed = 20261121L
  private val CorpusCases = sys.env.get("SKEWAGG_KILLSWITCH_CASES").map(_.toInt).getOrElse(200)

  /** Every this-many-th case also runs, so adaptive execution's run-time rules are compared. */
  private val ExecuteEvery = 5

  /**
   * The case's plan shapes with skewagg `enabled` in turn, each with the query executed (its
   * final plan, or its error) when `execute`, else planned only (adaptive: the initial plan).
   */
  private def runCase(
      s: SparkSession,
      c: FuzzCase,
      enabled: Seq[Boolean],
      execute: Boolean): Seq[String] = {
    val conf = s.conf
    val keys = c.conf.map(_._1) :+ SkewAggConf.ENABLED.key
    val saved = keys.map(k => k -> conf.getOption(k))
    try {
      c.conf.foreach { case (k, v) => conf.set(k, v) }
      c.setUp(s)
      enabled.map { on =>
        conf.set(SkewAggConf.ENABLED.key, on.toString)
        val df = s.sql(c.query)
        if (execute) {
          try { df.collect(); shape(executedPlan(df)) }
          catch { case NonFatal(e) => s"failed: ${e.getClass.getName}" }
        } else {
          shape(plannedWith(s, _ => df))
        }
      }
    } finally {
      c.cleanup.foreach(sql =>
        try s.sql(sql)
        catch { case NonFatal(_) => })
      saved.foreach {
        case (k, Some(v)) => conf.set(k, v)
        case (k, None) => conf.unset(k)
      }
    }
  }

  test(s"over $CorpusCases fuzz cases of seed $CorpusSeed: switched off at run time, every " +
    "plan is vanilla Spark's") {
    val vanilla = SharedSkewAggSession.vanilla
    spark.sparkContext.setLogLevel("OFF") // expected failures (ANSI overflow) log stack traces
    val results =
      try (0 until CorpusCases).map { i =>
          val c = FuzzGenerator.generate(CorpusSeed, i)
          val execute = i % ExecuteEvery == 0
          val Seq(on, off) = runCase(spark, c, Seq(true, false), execute)
          val Seq(expected) = runCase(vanilla, c, Seq(true), execute)
          (c, on, off, expected)
        }
      finally spark.sparkContext.setLogLevel("WARN")
    val different = results.filter { case (_, _, off, expected) =>
      !PlanShape.sameUpToOrder(off, expected)
    }
    assert(
      different.isEmpty,
      s"${different.size} plans differ (cases " +
        s"${different.map(_._1.index).mkString(", ")}); the first:" +
        different.take(2).map { case (c, _, off, expected) =>
          s"\ncase ${c.index}:\n${c.repro}\nskewagg switched off:\n$off\nvanilla:\n$expected"
        }.mkString("\n"))
    // Not vacuous: with skewagg on, many of these plans carry skewagg's operators.
    val rewritten = results.count { case (_, on, _, _) =>
      FuzzRunner.SkewAggOperators.exists(on.contains)
    }
    assert(rewritten >= CorpusCases / 10, s"only $rewritten cases rewritten")
    assert(results.forall { case (_, _, off, _) =>
      !FuzzRunner.SkewAggOperators.exists(off.contains)
    })
  }
}
