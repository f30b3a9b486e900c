package org.apache.spark.sql.skewagg

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.QueryStageExec

/**
 * Why a rule left an aggregate alone, for a reason the plan does not show, recorded where the
 * rule decides: a tag on the aggregate it looked at, which the explanation (`skewagg.explain`,
 * `EXPLAIN EXTENDED`) prints for that aggregate.
 */
object SkewAggDecisions {
  val Tag: TreeNodeTag[String] = TreeNodeTag[String]("skewagg.decision")

  /**
   * Records on `plan` (the aggregate a rule decided about) why it was left alone; returns it.
   * The text also goes on the query stages below it: when a query-stage preparation rule leaves
   * a plan unchanged, adaptive execution keeps its previous plan object (equal, but without the
   * tag), whose materialized stages are the same objects.
   */
  def record[T <: SparkPlan](plan: T, decision: String): T = {
    plan.setTagValue(Tag, decision)
    plan.foreach {
      case s: QueryStageExec => s.setTagValue(Tag, decision)
      case _ =>
    }
    plan
  }

  /**
   * Records on a logical aggregate why a planner strategy left it alone: explanations read it
   * through the logical link of the aggregate Spark plans from it.
   */
  def record(aggregate: LogicalPlan, decision: String): Unit = aggregate.setTagValue(Tag, decision)
}
