package org.apache.spark.sql.skewagg.explain

import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.plans.logical.Aggregate
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.execution.window.WindowExec
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  PlanNodes, PlanningFallback, SkewAggAggregateExec, SkewAggDecision, RecordedDecisions,
  SkewAggLocalStageExec, SkewAggRewriteExec, SkewAggWindowExec
}

/**
 * What skewagg decided for each aggregate of a query, in plain words with the numbers it used:
 * the text of `skewagg.explain(df)` and of the "skewagg" section that
 * `spark.sql.extendedExplainProviders=io.skewagg.SkewAggExplainGenerator` adds to Spark's
 * `EXPLAIN EXTENDED`.
 *
 * It only renders what was recorded where it was decided ([[SkewAggDecision]]s, through
 * [[RecordedDecisions]]): rewrites (their [[SkewAggLocalStageExec]] markers, skewagg's own
 * aggregates and windows with their numbers), what rules decided (a switch that stopped them, a
 * refusal, a part not done, not skewed), why an aggregate no rule rewrote was left alone
 * ([[LeftAloneReasons]]), and first the planning steps that failed and kept Spark's plan
 * ([[PlanningFallback]]). The plan is walked with the kernel's walks only ([[PlanNodes]]).
 */
object SkewAggExplain {

  /**
   * One paragraph per aggregate of `plan`, then per window (executed; for adaptive queries after
   * they ran). The copies a rewrite made of an aggregate (the branches of a union) are one.
   */
  def explain(plan: SparkPlan): String = {
    val aggregates = copiesTogether(nodes(plan).filter(LeftAloneReasons.isFinalAggregate))
    val windows = nodes(plan).filter {
      case _: WindowExec | _: SkewAggWindowExec => true
      case _ => false
    }
    val fellBack = fallbacks(plan).map(f => s"fallback: $f\n").mkString
    if (aggregates.isEmpty && windows.isEmpty) {
      return fellBack + "skewagg: the query has no aggregate.\n"
    }
    val adaptive = unfinishedAdaptive(plan)
    fellBack + aggregates.zipWithIndex.map { case (copies, i) =>
      s"aggregate ${i + 1}: ${label(copies.head)}\n  ${decide(copies, adaptive)}\n"
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
    case s: SkewAggWindowExec if s.leftAloneWhenRun => s"left alone when it ran: ${s.decision}"
    case s: SkewAggWindowExec => s"rewritten: ${s.decision}"
    case _ =>
      val recorded =
        PlanNodes.downToExchanges(window).flatMap(RecordedDecisions.aboutAggregate).distinct
      if (recorded.nonEmpty) recorded.map(_.text).mkString("\n  ")
      else if (adaptiveNotRun) SkewAggDecision.Pending("the sizes of the window's shuffle").text
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
    RecordedDecisions.fellBack(node) ++ node.logicalLink.toSeq.flatMap(RecordedDecisions.fellBack)
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
      val functions = PlanNodes.logicalOf(s).collect { case a: Aggregate => a }.toSeq
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

  /**
   * The aggregates in order, each with its copies: aggregates with the same label planned from
   * the same logical plan.
   */
  private def copiesTogether(aggregates: Seq[SparkPlan]): Seq[Seq[SparkPlan]] =
    aggregates.foldLeft(Vector.empty[Vector[SparkPlan]]) { (groups, agg) =>
      val logical = PlanNodes.logicalOf(agg)
      val copyOf = groups.indexWhere(g =>
        logical.isDefined && PlanNodes.logicalOf(g.head).exists(_ eq logical.get) &&
          label(g.head) == label(agg))
      if (copyOf < 0) groups :+ Vector(agg) else groups.updated(copyOf, groups(copyOf) :+ agg)
    }

  /**
   * What was recorded about an aggregate's `copies` ([[LeftAloneReasons.recordedAbout]]); where a
   * rewrite made them, what the copies it rewrote record (a copy it left as it was says nothing
   * of the rewrite). Where nothing was recorded, the decision is still to come (an adaptive plan
   * not run) or was never made (a plan planned without skewagg's rules).
   */
  private def decide(copies: Seq[SparkPlan], adaptiveNotRun: Boolean): String = {
    val byCopy = copies.map(LeftAloneReasons.recordedAbout)
    val rewrittenCopies = byCopy.filter(_.exists(isRewritten))
    val (rewritten, others) =
      (if (rewrittenCopies.nonEmpty) rewrittenCopies else byCopy).flatten.partition(isRewritten)
    val recorded = (rewritten ++ others).map(_.text).distinct
    if (recorded.nonEmpty) recorded.mkString("\n  ")
    else if (adaptiveNotRun) SkewAggDecision.Pending("the sizes of the shuffle below").text
    else "no decision recorded: the plan was not planned by a session with skewagg's rules."
  }

  private def isRewritten(decision: SkewAggDecision): Boolean =
    decision.isInstanceOf[SkewAggDecision.Rewritten]
}
