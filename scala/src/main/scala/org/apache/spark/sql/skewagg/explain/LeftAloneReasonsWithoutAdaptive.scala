package org.apache.spark.sql.skewagg.explain

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, SparkPlan}

/**
 * [[LeftAloneReasons]] before columnar transitions, the last physical hook: without adaptive
 * execution on the whole plan; with it, on each new query stage and the final plan, whose inputs
 * have run.
 */
case class LeftAloneReasonsWithoutAdaptive(session: SparkSession) extends ColumnarRule {
  override def preColumnarTransitions: Rule[SparkPlan] = LeftAloneReasons(session, false)
}
