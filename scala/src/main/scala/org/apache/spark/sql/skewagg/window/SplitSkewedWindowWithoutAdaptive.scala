package org.apache.spark.sql.skewagg.window

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, SparkPlan}

/**
 * Without adaptive execution Spark offers no physical-plan hook after `EnsureRequirements` but
 * the columnar rules: [[SplitSkewedWindow]] over the exchanges Spark planned, before columnar
 * transitions. (Under adaptive execution the windows' shuffles are query stages by then, which
 * this does not match.)
 */
case class SplitSkewedWindowWithoutAdaptive(session: SparkSession) extends ColumnarRule {
  override def preColumnarTransitions: Rule[SparkPlan] = SplitSkewedWindow(session, false)
}
