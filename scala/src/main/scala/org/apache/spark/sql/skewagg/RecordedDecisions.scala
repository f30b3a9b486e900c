package org.apache.spark.sql.skewagg

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.trees.{TreeNode, TreeNodeTag}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.QueryStageExec

/**
 * The [[SkewAggDecision]]s rules made about an aggregate, recorded where they decide: a tag on
 * the node they looked at (the physical aggregate, or the logical aggregate a strategy planned
 * from), which the explanation (`skewagg.explain`, `EXPLAIN EXTENDED`) prints for that aggregate.
 * A node keeps each distinct decision once, in the order recorded: rules run again each time
 * adaptive execution re-plans.
 */
object RecordedDecisions {
  val Tag: TreeNodeTag[Seq[SkewAggDecision]] = TreeNodeTag[Seq[SkewAggDecision]]("skewagg.decision")

  /**
   * Records on `plan` (the aggregate a rule decided about) what the rule decided; returns it.
   * The record also goes on the query stages below it: when a query-stage preparation rule leaves
   * a plan unchanged, adaptive execution keeps its previous plan object (equal, but without the
   * tag), whose materialized stages are the same objects.
   */
  def record[T <: SparkPlan](plan: T, decision: SkewAggDecision): T = {
    add(plan, decision)
    plan.foreach {
      case s: QueryStageExec => add(s, decision)
      case _ =>
    }
    plan
  }

  /**
   * Records on a logical aggregate what a planner strategy decided: explanations read it through
   * the logical link of the aggregate Spark plans from it.
   */
  def record(aggregate: LogicalPlan, decision: SkewAggDecision): Unit = add(aggregate, decision)

  /**
   * Records `decision` on `node` only (an operator or marker that decided about itself, an
   * aggregate no rule rewrote, or the plan a failed planning step was given). An
   * [[SkewAggDecision.AtRunTime]] replaces the one recorded before for the same step; any other
   * decision settles, and replaces, a [[SkewAggDecision.Pending]] one.
   */
  def note(node: TreeNode[_], decision: SkewAggDecision): Unit = {
    val replaced: SkewAggDecision => Boolean = decision match {
      case SkewAggDecision.AtRunTime(step, _, _) => {
        case SkewAggDecision.AtRunTime(`step`, _, _) => true
        case _ => false
      }
      case _: SkewAggDecision.Pending => _ => false
      case _ => _.isInstanceOf[SkewAggDecision.Pending]
    }
    node.setTagValue(Tag, of(node).filterNot(replaced))
    add(node, decision)
  }

  /** Drops from `node` a [[SkewAggDecision.Pending]] decision that was settled elsewhere. */
  def settle(node: TreeNode[_]): Unit =
    node.setTagValue(Tag, of(node).filterNot(_.isInstanceOf[SkewAggDecision.Pending]))

  /** The decisions recorded on `node`. */
  def of(node: TreeNode[_]): Seq[SkewAggDecision] = node.getTagValue(Tag).getOrElse(Nil)

  /**
   * What rules decided about the aggregate or window `node` is (or a stage below one): not what
   * an operator noted about its own run, nor fallbacks.
   */
  def aboutAggregate(node: TreeNode[_]): Seq[SkewAggDecision] = of(node).filter {
    case _: SkewAggDecision.AtRunTime | _: SkewAggDecision.FellBack => false
    case _ => true
  }

  /** What `node` decided while the query ran, in the order its steps were first decided. */
  def atRunTime(node: TreeNode[_]): Seq[SkewAggDecision.AtRunTime] =
    of(node).collect { case d: SkewAggDecision.AtRunTime => d }

  /** The planning steps that fell back with `node` as their input. */
  def fellBack(node: TreeNode[_]): Seq[SkewAggDecision.FellBack] =
    of(node).collect { case d: SkewAggDecision.FellBack => d }

  private def add(node: TreeNode[_], decision: SkewAggDecision): Unit = {
    val before = of(node)
    if (!before.contains(decision)) node.setTagValue(Tag, before :+ decision)
  }
}
