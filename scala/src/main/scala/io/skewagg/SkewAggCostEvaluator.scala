package io.skewagg

import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.{Cost, CostEvaluator}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeLike
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{CheapExchanges, SkewAggConf}
import org.apache.spark.sql.skewagg.skewsplit.SparkCostModel

/**
 * The adaptive-execution cost model for skewagg:
 * `spark.sql.adaptive.customCostEvaluatorClass=io.skewagg.SkewAggCostEvaluator`.
 *
 * Spark's default model counts shuffles, so it rejects a re-optimized plan that splits a skewed
 * join below an aggregate and then needs one more exchange before the final aggregate. That
 * exchange moves only the partial aggregate's results (one row per key and task), so this model
 * does not count exchanges whose input is a partial aggregate. Everything else is counted as
 * Spark's default model does (including its `forceOptimizeSkewedJoin` preference), and with
 * `spark.skewagg.enabled=false` it is exactly Spark's default model.
 */
class SkewAggCostEvaluator extends CostEvaluator {
  override def evaluateCost(plan: SparkPlan): Cost = {
    val cheap = if (!SkewAggConf.enabled(SQLConf.get)) 0
    else plan.collect {
      case s: ShuffleExchangeLike if CheapExchanges.isCheapExchange(s) => s
    }.size
    SparkCostModel.costWithout(plan, uncounted = cheap)
  }
}
