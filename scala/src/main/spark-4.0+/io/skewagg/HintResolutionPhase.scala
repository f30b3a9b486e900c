package io.skewagg

import org.apache.spark.sql.{SparkSession, SparkSessionExtensions}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule

/** The analysis phase that resolves skewagg's hints. */
object HintResolutionPhase {

  /** Spark 4.0+: the hint resolution batch, before the plan is resolved. */
  def inject(
      extensions: SparkSessionExtensions,
      rule: SparkSession => Rule[LogicalPlan]): Unit =
    extensions.injectHintResolutionRule(rule)
}
