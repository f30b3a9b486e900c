package org.apache.spark.sql.skewagg.skewsplit

import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.{Cost, SimpleCost, SimpleCostEvaluator}
import org.apache.spark.sql.internal.SQLConf

/**
 * Spark's default adaptive cost model, Spark 4.0 to 4.2: one number, the shuffles in its low bits
 * (with forceOptimizeSkewedJoin, minus the skew joins in its high bits).
 */
object SparkCostModel {

  /** Spark's default cost of `plan`, with `uncounted` of its shuffles not counted. */
  def costWithout(plan: SparkPlan, uncounted: Int): Cost = {
    val force = SQLConf.get.getConf(SQLConf.ADAPTIVE_FORCE_OPTIMIZE_SKEWED_JOIN)
    SimpleCostEvaluator(force).evaluateCost(plan) match {
      case SimpleCost(value) => SimpleCost(value - uncounted)
      case other => other
    }
  }
}
