package org.apache.spark.sql.skewagg.explain

import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, LogicalPlan}
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.{
  AdaptiveSparkPlanExec, LogicalQueryStage, ShuffleQueryStageExec
}
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.execution.exchange.ShuffleExchangeLike
import org.apache.spark.sql.execution.joins.ShuffledJoin
import org.apache.spark.sql.execution.window.WindowExec
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  FusedAggregates, PartialAggregates, PlanNodes, PlanningFallback, SkewAggAggregateExec,
  SkewAggConf, SkewAggDecision, SkewAggDecisions, SkewAggHints, SkewAggLocalStageExec,
  SkewAggRewriteExec, SkewAggWindowExec, SkewedPartitions
}

/**
 * What skewagg decided for each aggregate of a query, in plain words with the numbers it used:
 * the text of `skewagg.explain(df)` and of the "skewagg" section that
 * `spark.sql.extendedExplainProviders=io.skewagg.SkewAggExplainGenerator` adds to Spark's
 * `EXPLAIN EXTENDED`.
 *
 * Rewrites name themselves through their [[SkewAggLocalStageExec]] marker, and skewagg's own
 * aggregates ([[SkewAggAggregateExec]]) with their numbers. What rules decided where they decide
 * ([[SkewAggDecision]]s: a switch that stopped them, a refusal, a part not done) is recorded with
 * [[SkewAggDecisions.record]] and printed as it is. A planning step that failed and kept Spark's
 * plan says so first ([[PlanningFallback]]). Where no rule recorded anything, the reason is read
 * from the executed plan with the rules' own tests: the hint, skewagg off, the sizes of the
 * materialized shuffle below (skewagg's [[SkewedPartitions]] thresholds), or the shape of the
 * plan.
 */
object SkewAggExplain {

  /**
   * One paragraph per aggregate of `plan`, then per window (executed; for adaptive queries after
   * they ran).
   */
  def explain(plan: SparkPlan): String = {
    val aggregates = nodes(plan).filter {
      case a: BaseAggregateExec => !PartialAggregates.isPartial(a)
      case _: SkewAggAggregateExec => true
      case PythonAggregates(_, _) => true
      case _ => false
    }
    val windows = nodes(plan).filter {
      case _: WindowExec | _: SkewAggWindowExec => true
      case _ => false
    }
    val fellBack = fallbacks(plan).map(f => s"fallback: $f\n").mkString
    if (aggregates.isEmpty && windows.isEmpty) {
      return fellBack + "skewagg: the query has no aggregate.\n"
    }
    val adaptive = unfinishedAdaptive(plan)
    fellBack + aggregates.zipWithIndex.map { case (agg, i) =>
      s"aggregate ${i + 1}: ${label(agg)}\n  ${decide(agg, adaptive)}\n"
    }.mkString + windows.zipWithIndex.map { case (window, i) =>
      s"window ${i + 1}: ${windowLabel(window)}\n  ${decideWindow(window, adaptive)}\n"
    }.mkString
  }

  private def windowLabel(window: SparkPlan): String = {
    val (keys, functions) = window match {
      case w: WindowExec => (w.partitionSpec, w.windowExpression)
      case s: SkewAggWindowExec =>
        (s.partitionSpec, window.output.drop(window.children.head.output.size))
    }
    val names = keys.map {
      case a: Attribute => a.name
      case other => other.sql
    }
    s"PARTITION BY ${names.mkString(", ")}: ${functions.map(_.name).mkString(", ")}"
  }

  /**
   * What was recorded about a window: on it, or on the first stage below it (adaptive execution
   * keeps its previous plan objects when a rule changes nothing).
   */
  private def decideWindow(window: SparkPlan, adaptiveNotRun: Boolean): String = window match {
    case s: SkewAggWindowExec => s"rewritten: ${s.decision}"
    case _ =>
      val recorded =
        PlanNodes.downToExchanges(window).flatMap(SkewAggDecisions.aboutAggregate).distinct
      if (recorded.nonEmpty) recorded.map(_.text).mkString("\n  ")
      else if (adaptiveNotRun) "not decided yet: the query has not run (skewagg decides on the " +
        "sizes of the window's shuffle once it ran)."
      else "Spark's window: skewagg splits a window over its own shuffle, and this one reads " +
        "another's (a window below it on the same keys, or a user's repartition)."
  }

  /**
   * One line per skewagg operator that ran in `plan` (executed): the local stage markers and the
   * one-key-at-a-time aggregates, with what they print in Spark's plan, including those inside
   * reused stages (which Spark's plan text does not show).
   */
  def operatorLines(plan: SparkPlan): String = nodes(plan).filter {
    case _: SkewAggRewriteExec => true
    case _ => false
  }.map(_.simpleString(SQLConf.get.maxToStringFields)).mkString("\n")

  /**
   * The planning steps that failed and kept Spark's plan ([[PlanningFallback]]), as recorded on
   * the plan's nodes or on the logical plans they were planned from.
   */
  private def fallbacks(plan: SparkPlan): Seq[String] = nodes(plan).flatMap { node =>
    SkewAggDecisions.fellBack(node) ++ node.logicalLink.toSeq.flatMap(SkewAggDecisions.fellBack)
  }.distinct.map(_.text)

  private def nodes(plan: SparkPlan): Seq[SparkPlan] = PlanNodes.all(plan)

  private def unfinishedAdaptive(plan: SparkPlan): Boolean = plan.exists {
    case a: AdaptiveSparkPlanExec => !a.isFinalPlan
    case _ => false
  }

  private def label(agg: SparkPlan): String = agg match {
    case a: BaseAggregateExec =>
      val keys = a.groupingExpressions.map(_.name).mkString(", ")
      val functions = a.aggregateExpressions.map(_.aggregateFunction.sql(false)).mkString(", ")
      s"group by [$keys] computing [$functions] (${a.nodeName})"
    case s: SkewAggAggregateExec =>
      // Labelled with the functions the user wrote, which its logical aggregate keeps.
      val functions = logicalOf(s).collect { case a: Aggregate => a }.toSeq
        .flatMap(_.aggregateExpressions.flatMap(_.collect {
          case a: AggregateExpression => a.aggregateFunction.sql(a.isDistinct)
        })).distinct
      s"group by [${s.groupingAttributes.map(_.name).mkString(", ")}] computing " +
        s"[${functions.mkString(", ")}] (${s.nodeName})"
    case p @ PythonAggregates(grouping, aggregates) =>
      s"group by [${grouping.map(_.name).mkString(", ")}] computing " +
        s"[${aggregates.map(_.aggregateFunction.sql(false)).mkString(", ")}] (${p.nodeName})"
    case other => other.nodeName
  }

  private def decide(agg: SparkPlan, adaptiveNotRun: Boolean): String = {
    val conf = SQLConf.get
    val below = PartialAggregates.phasesBelow(agg)
    val own = agg match {
      case s: SkewAggAggregateExec => Seq(s"rewritten: ${s.decision}")
      case _ => Nil
    }
    val marked = below.collect { case m: SkewAggLocalStageExec => s"rewritten: ${m.decision}" }
    // Recorded on the plan, or by a strategy on the logical aggregate the plan was planned from.
    val recorded = (agg +: below).flatMap { p =>
      SkewAggDecisions.aboutAggregate(p) ++
        logicalOf(p).toSeq.flatMap(SkewAggDecisions.aboutAggregate)
    }.distinct
    val rewritten = own ++ marked ++
      recorded.collect { case r: SkewAggDecision.Rewritten => r.text }
    val others = recorded.filterNot(_.isInstanceOf[SkewAggDecision.Rewritten]).map(_.text)
    if (rewritten.nonEmpty) return (rewritten ++ others).distinct.mkString("\n  ")
    // What the rules recorded, then what the plan shows; "no rewrite matches" only where no
    // rule recorded why it did not rewrite.
    val shown = fromPlan(agg, conf, adaptiveNotRun)
    val measured = recorded.exists(_.isInstanceOf[SkewAggDecision.NotSkewed])
    val lines =
      if (others.nonEmpty && (measured || shown.startsWith(SkewedNoMatch))) others
      else others :+ shown
    lines.distinct.mkString("\n  ")
  }

  private val SkewedNoMatch = "left alone although skewed"

  /** Why `agg` was left alone, read from the executed plan with the rules' own tests. */
  private def fromPlan(agg: SparkPlan, conf: SQLConf, adaptiveNotRun: Boolean): String = {
    agg match {
      case PythonAggregates(_, _) =>
        return "left alone: a Python UDAF (pandas_udf) cannot be split into partial and final " +
          "halves."
      case _ =>
    }
    if (!SkewAggConf.enabled(conf)) {
      return s"left alone: skewagg is off (${SkewAggConf.ENABLED.key}=false)."
    }
    val partial = PartialAggregates.bottomPartialBelow(agg)
    if ((agg +: partial.toSeq).exists(SkewAggHints.forbidden)) {
      return s"left alone: hint ${SkewAggHints.Forbid}."
    }
    partial match {
      // Spark fused the two halves: skewagg's rules split such an aggregate as they split its
      // partial half, so it is explained from its input the same way.
      case None if FusedAggregates.isFused(agg) => decideFromInput(agg, conf, adaptiveNotRun)
      case None =>
        "left alone: Spark plans this aggregate in one phase (no partial aggregate), so " +
          "there is no partial result to exchange."
      case Some(p) => decideFromInput(p, conf, adaptiveNotRun)
    }
  }

  /** The logical plan `node` was planned from, through a stage adaptive execution made of it. */
  private def logicalOf(node: SparkPlan): Option[LogicalPlan] = node.logicalLink.map {
    case stage: LogicalQueryStage => stage.logicalPlan
    case other => other
  }

  /** Why a partial aggregate was not rewritten, from what it reads. */
  private def decideFromInput(
      partial: SparkPlan,
      conf: SQLConf,
      adaptiveNotRun: Boolean): String = {
    val input = PartialAggregates.inputBelow(PartialAggregates.unwrap(partial).children.head)
    val shuffles: Seq[SparkPlan] = input match {
      case j: ShuffledJoin => j.children.map(PartialAggregates.inputBelow)
      case other => Seq(other)
    }
    val what = if (input.isInstanceOf[ShuffledJoin]) "the join's input shuffles" else "the shuffle"
    val materialized = shuffles.collect {
      case s: ShuffleQueryStageExec if s.isMaterialized && s.mapStats.isDefined =>
        s.mapStats.get.bytesByPartitionId
    }
    if (materialized.nonEmpty) {
      val (sizes, skew) = materialized.map(s => (s, SkewedPartitions.find(s, conf)))
        .maxBy(_._1.max)
      if (skew.nonEmpty) {
        s"$SkewedNoMatch (" + SkewAggLocalStageExec.describe("partition", skew) +
          "): no skewagg rewrite matches this plan shape (see docs/rewrites.md)."
      } else SkewAggDecision.NotSkewed.of(s"$what below", sizes, conf).text
    } else if (shuffles.exists(isShuffle)) {
      if (adaptiveNotRun) {
        "not decided yet: skewagg decides from the sizes of the shuffle below once it ran. " +
          "Run the query (e.g. df.collect()) and explain it again."
      } else {
        s"left alone: $what below is sized only at run time, and adaptive execution is off " +
          s"(${SQLConf.ADAPTIVE_EXECUTION_ENABLED.key}=false). Turn it on, or put the " +
          s"${SkewAggHints.Force} hint on the aggregate."
      }
    } else input match {
      case s: FileSourceScanExec if s.bucketedScan =>
        "left alone: the bucket files are not skewed by skewagg's thresholds " +
          s"(${SkewAggConf.SKEW_FACTOR.key}=${conf.getConf(SkewAggConf.SKEW_FACTOR)}, " +
          s"${SkewAggConf.SKEW_MIN_PARTITION_SIZE.key}=" +
          s"${SkewAggLocalStageExec.bytes(conf.getConf(SkewAggConf.SKEW_MIN_PARTITION_SIZE))})."
      case _ =>
        "left alone: Spark's own plan already aggregates each task's rows before the shuffle, " +
          "so a hot key's rows are combined per task and there is nothing to split."
    }
  }

  private def isShuffle(plan: SparkPlan): Boolean = plan match {
    case _: ShuffleExchangeLike | _: ShuffleQueryStageExec => true
    case _ => false
  }
}
