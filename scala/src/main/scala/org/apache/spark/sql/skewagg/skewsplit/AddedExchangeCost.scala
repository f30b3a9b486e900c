package org.apache.spark.sql.skewagg.skewsplit

import java.util.concurrent.atomic.AtomicBoolean

import org.apache.spark.internal.Logging
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.SkewAggDecision
import org.apache.spark.sql.skewagg.SkewAggDecision.Refused

/**
 * Whether adaptive execution keeps a split that adds an exchange. Spark's default cost model
 * (`SimpleCostEvaluator`) counts a plan's exchanges and keeps the plan it had when a re-planned
 * one has more, so without a custom cost model (`io.skewagg.SkewAggCostEvaluator`, which counts
 * the exchanges of partial results skewagg adds as free) such a split would be dropped unseen;
 * the rules leave the plan alone instead and record why, naming the setting.
 */
object AddedExchangeCost extends Logging {
  private val warned = new AtomicBoolean(false)

  private val Setting =
    s"${SQLConf.ADAPTIVE_CUSTOM_COST_EVALUATOR_CLASS.key}=io.skewagg.SkewAggCostEvaluator"

  /** A custom cost model is set: a plan with an added exchange is not rejected for it. */
  def accepted(conf: SQLConf): Boolean =
    conf.getConf(SQLConf.ADAPTIVE_CUSTOM_COST_EVALUATOR_CLASS).isDefined

  /**
   * Adaptive execution keeps `after` in place of `before`: a custom cost model is set, or Spark's
   * default one ([[SparkCostModel]]) finds it no more costly.
   */
  def keeps(conf: SQLConf, before: SparkPlan, after: SparkPlan): Boolean =
    accepted(conf) ||
      SparkCostModel.costWithout(after, uncounted = 0) <=
      SparkCostModel.costWithout(before, uncounted = 0)

  /** The record of a rewrite left out for the default cost model: `found`, then why. */
  def refusal(found: String, rewrite: String): SkewAggDecision =
    Refused(
      s"$found, but Spark's default adaptive cost model rejects the exchange of partial results " +
        s"skewagg needs. Set $Setting.",
      rewrite)

  /** One warning per JVM, naming what was found and left alone. */
  def warnOnce(found: String): Unit = if (warned.compareAndSet(false, true)) {
    logWarning(s"skewagg found $found but left it alone: Spark's default adaptive cost model " +
      s"rejects the exchange it needs. Set $Setting (skewagg.configure() does this for PySpark).")
  }
}
