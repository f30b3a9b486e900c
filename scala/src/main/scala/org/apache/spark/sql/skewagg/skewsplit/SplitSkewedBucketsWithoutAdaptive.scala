package org.apache.spark.sql.skewagg.skewsplit

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, SparkPlan}

/**
 * Without adaptive execution Spark offers no physical-plan hook after `EnsureRequirements` but
 * the columnar rules: [[SplitSkewedBucketsBelowAggregate]] over the plan with its final
 * exchanges, before columnar transitions. (Under adaptive execution the rule already ran in
 * query-stage preparation and decides from the same plan facts: running it again is a no-op.)
 */
case class SplitSkewedBucketsWithoutAdaptive(session: SparkSession) extends ColumnarRule {
  override def preColumnarTransitions: Rule[SparkPlan] = SplitSkewedBucketsBelowAggregate(session)
}
