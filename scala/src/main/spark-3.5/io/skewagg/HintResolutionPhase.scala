package io.skewagg

import org.apache.spark.sql.{SparkSession, SparkSessionExtensions}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule

/** The analysis phase that resolves skewagg's hints. */
object HintResolutionPhase {

  /**
   * Spark 3.5 has no hint resolution hook: the resolution batch, which runs before Spark drops
   * the hints no rule resolved.
   */
  def inject(
      extensions: SparkSessionExtensions,
      rule: SparkSession => Rule[LogicalPlan]): Unit =
    extensions.injectResolutionRule(rule)
}
