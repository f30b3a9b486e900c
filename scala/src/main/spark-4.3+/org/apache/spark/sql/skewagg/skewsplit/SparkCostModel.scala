package org.apache.spark.sql.skewagg.skewsplit

import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.{Cost, SimpleCost, SimpleCostEvaluator}
import org.apache.spark.sql.internal.SQLConf

/**
 * Spark's default adaptive cost model, Spark 4.3 and newer: skew joins, shuffles and (optionally)
 * local sorts, compared in that order.
 */
object SparkCostModel {

  /** Spark's default cost of `plan`, with `uncounted` of its shuffles not counted. */
  def costWithout(plan: SparkPlan, uncounted: Int): Cost = {
    val conf = SQLConf.get
    val evaluator = SimpleCostEvaluator(
      conf.getConf(SQLConf.ADAPTIVE_FORCE_OPTIMIZE_SKEWED_JOIN),
      conf.getConf(SQLConf.ADAPTIVE_COST_EVALUATOR_COUNT_LOCAL_SORT_ENABLED))
    evaluator.evaluateCost(plan) match {
      case SimpleCost(skewJoins, shuffles, localSorts) =>
        SimpleCost(skewJoins, shuffles - uncounted, localSorts)
      case other => other
    }
  }
}
