package org.apache.spark.sql.skewagg

import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, Complete}
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.execution.{SortExec, SparkPlan}
import org.apache.spark.sql.execution.aggregate.{AggUtils, BaseAggregateExec}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeLike

/**
 * Spark's fused aggregates: where no exchange separates an aggregate's partial and final halves
 * (over a shuffled join, a user repartition, a bucketed scan: the plans skewagg's run-time splits
 * are for), Spark may plan one Complete-mode aggregate instead of the two halves.
 * `spark.sql.execution.combineAdjacentAggregation` does so (Spark 4.3, on by default), and
 * `spark.sql.execution.replaceHashWithSortAgg` does so over sorted input (every line, off by
 * default). Both run after the exchanges are placed, before skewagg's physical rules.
 *
 * A fused aggregate holds the same grouping and aggregate expressions as the two halves, so it
 * splits back into them exactly (`halves`: Spark's own planning of an aggregate without DISTINCT).
 * A physical rule that rewrites a partial aggregate runs through [[splitWhere]]: the fused
 * aggregates whose partial half it may rewrite are split for it, and the ones it leaves as they
 * were are fused again, so a plan skewagg does not rewrite stays exactly Spark's.
 */
object FusedAggregates {

  /** On a final half made by [[splitWhere]]: the fused aggregate and the partial half. */
  private val SplitFrom = TreeNodeTag[(BaseAggregateExec, SparkPlan)]("skewagg.splitFrom")

  /**
   * A fused aggregate: one that requires its input clustered and aggregates it in one phase,
   * every aggregate expression Complete, or with none (a grouping-only aggregate) over input that
   * no partial aggregate of its own prepared.
   */
  def isFused(plan: SparkPlan): Boolean = plan match {
    case agg: BaseAggregateExec if agg.requiredChildDistributionExpressions.exists(_.nonEmpty) =>
      if (agg.aggregateExpressions.nonEmpty) agg.aggregateExpressions.forall(_.mode == Complete)
      else !partialBelow(agg.child)
    case _ => false
  }

  /**
   * A fused aggregate without grouping keys: one Complete-mode phase over input that is one
   * partition already (the rows of a window without PARTITION BY, say).
   */
  def isFusedGlobal(plan: SparkPlan): Boolean = plan match {
    case agg: BaseAggregateExec if agg.requiredChildDistributionExpressions.contains(Nil) =>
      agg.aggregateExpressions.nonEmpty && agg.aggregateExpressions.forall(_.mode == Complete)
    case _ => false
  }

  /** A partial aggregate below `plan`, through exchanges, sorts and row-local operators. */
  private def partialBelow(plan: SparkPlan): Boolean = PartialAggregates.unwrap(plan) match {
    case a if PartialAggregates.isPartial(a) => true
    case s: SortExec => partialBelow(s.child)
    case e: ShuffleExchangeLike => partialBelow(e.child)
    case p if PartialAggregates.belowRowLocal(p) ne p =>
      partialBelow(PartialAggregates.belowRowLocal(p))
    case _ => false
  }

  /**
   * `agg`, fused (with or without grouping keys), as Spark plans its two halves: (final,
   * partial), the final half reading the partial one, both linked to `agg`'s logical aggregate
   * (hints and adaptive re-planning read it). None when `agg` is not fused or not planned as two
   * halves.
   */
  def halves(agg: BaseAggregateExec): Option[(BaseAggregateExec, BaseAggregateExec)] = {
    if (!isFused(agg) && !isFusedGlobal(agg)) return None
    AggUtils.planAggregateWithoutDistinct(
      agg.groupingExpressions,
      outputNamed(agg),
      agg.resultExpressions,
      agg.child) match {
      case Seq(top: BaseAggregateExec) => top.child match {
          case partial: BaseAggregateExec =>
            agg.logicalLink.foreach { l => top.setLogicalLink(l); partial.setLogicalLink(l) }
            Some((top, partial))
          case _ => None
        }
      case _ => None
    }
  }

  /**
   * `agg`'s aggregate expressions, each with the result id `agg` outputs it under: a fused
   * DISTINCT aggregate keeps the final half's attributes and the partial half's expressions,
   * whose result ids differ (docs/rewrites.md, "Fused aggregates").
   */
  private def outputNamed(agg: BaseAggregateExec): Seq[AggregateExpression] =
    agg.aggregateExpressions.zip(agg.aggregateAttributes).map { case (e, a) =>
      if (e.resultId == a.exprId) e else e.copy(resultId = a.exprId)
    }

  /** `b` is `a` with other children. */
  private def sameNode(a: SparkPlan, b: SparkPlan): Boolean =
    a.getClass == b.getClass && a.children.size == b.children.size &&
      b.withNewChildren(a.children).fastEquals(a)

  /**
   * `candidate`, or the partial half of an aggregate right above one that is or reads a candidate
   * (through row-local operators): the regrouping step of a DISTINCT whose first step a rule
   * splits. Spark 4.3 fuses it (a Complete `count(DISTINCT i)`); split as well, it takes the
   * exchange on the keys that the split needs between its halves.
   */
  def orRegrouping(candidate: SparkPlan => Boolean): SparkPlan => Boolean = plan =>
    candidate(plan) || PartialAggregates.isPartial(plan) && plan.children.size == 1 &&
      (PartialAggregates.belowRowLocal(plan.children.head) match {
        case below: BaseAggregateExec =>
          candidate(below) || below.children.exists(c =>
            candidate(PartialAggregates.belowRowLocal(c)))
        case _ => false
      })

  /**
   * `rule` applied to `plan` in which each fused aggregate whose partial half `candidate`
   * accepts is split into its halves; where `rule` left such a partial half as it was, the two
   * halves are fused again into the original aggregate over the partial half's input as the rule
   * left it (a fused aggregate below may have been fused again, or rewritten), and a decision
   * the rule recorded on the partial half moves to it.
   */
  def splitWhere(plan: SparkPlan, candidate: SparkPlan => Boolean)(
      rule: SparkPlan => SparkPlan): SparkPlan = {
    val split = plan.transformUp {
      case agg: BaseAggregateExec if isFused(agg) || isFusedGlobal(agg) =>
        halves(agg).filter { case (_, partial) => candidate(partial) }.map { case (top, partial) =>
          top.setTagValue(SplitFrom, (agg, partial))
          top
        }.getOrElse(agg)
    }
    if (split.fastEquals(plan)) return rule(plan)
    rule(split).transformUp {
      case top: BaseAggregateExec
          if top.getTagValue(SplitFrom).exists(s => sameNode(s._2, top.child)) =>
        val fused = top.getTagValue(SplitFrom).get._1.withNewChildren(top.child.children)
        RecordedDecisions.of(top.child).foreach(RecordedDecisions.record(fused, _))
        fused
    }
  }
}
