package org.apache.spark.sql.skewagg

import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.execution.exchange.ReusedExchangeExec

/**
 * Walking executed plans with Spark's [[AdaptiveSparkPlanHelper]] (through adaptive plans and
 * query stages), and into reused exchanges, which Spark's helper treats as leaves: a stage that
 * adaptive execution reused still ran skewagg's operators.
 */
object PlanNodes extends AdaptiveSparkPlanHelper {

  /** Every node of `plan`, top down, those below reused exchanges included. */
  def all(plan: SparkPlan): Seq[SparkPlan] = flatMap(plan) {
    case r: ReusedExchangeExec => r +: all(r.child)
    case other => Seq(other)
  }
}
