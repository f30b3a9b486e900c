package org.apache.spark.sql.skewagg

import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.adaptive.{
  AdaptiveSparkPlanHelper, LogicalQueryStage, QueryStageExec
}
import org.apache.spark.sql.execution.exchange.{ReusedExchangeExec, ShuffleExchangeLike}

/**
 * Walking executed plans with Spark's [[AdaptiveSparkPlanHelper]] (through adaptive plans and
 * query stages), and into reused exchanges, which Spark's helper treats as leaves: a stage that
 * adaptive execution reused still ran skewagg's operators.
 */
object PlanNodes extends AdaptiveSparkPlanHelper {

  /** Every node of `plan`, top down, those below reused exchanges included. */
  def all(plan: SparkPlan): Seq[SparkPlan] = withParents(plan).map(_._1)

  /**
   * Every node of `plan`, top down, each with the index (in this list) of the node it is an
   * input of, -1 for the top.
   */
  def withParents(plan: SparkPlan): Seq[(SparkPlan, Int)] = {
    val nodes = Seq.newBuilder[(SparkPlan, Int)]
    var next = 0
    def visit(node: SparkPlan, parent: Int): Unit = {
      val index = next
      next += 1
      nodes += node -> parent
      inputs(node).foreach(visit(_, index))
    }
    visit(plan, -1)
    nodes.result()
  }

  /**
   * `plan` and the nodes below it down to the first exchanges (shuffle exchanges, query stages,
   * reused exchanges, which are included): the nodes of `plan`'s own stage.
   */
  def downToExchanges(plan: SparkPlan): Seq[SparkPlan] = plan +: (plan match {
    case _: QueryStageExec | _: ReusedExchangeExec | _: ShuffleExchangeLike => Nil
    case other => other.children.flatMap(downToExchanges)
  })

  /** The logical plan `node` was planned from, through a stage adaptive execution made of it. */
  def logicalOf(node: SparkPlan): Option[LogicalPlan] = node.logicalLink.map {
    case stage: LogicalQueryStage => stage.logicalPlan
    case other => other
  }

  private def inputs(node: SparkPlan): Seq[SparkPlan] = node match {
    case r: ReusedExchangeExec => Seq(r.child)
    case other => allChildren(other)
  }
}
