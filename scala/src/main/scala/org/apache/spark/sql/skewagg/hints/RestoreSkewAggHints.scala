package org.apache.spark.sql.skewagg.hints

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.skewagg.{
  AggregateHintCarrier, SkewAggAnalysisException, SkewAggHint, SkewAggHints
}
import org.apache.spark.sql.catalyst.rules.Rule

/**
 * Post-hoc resolution: the SKEW_AGG / NO_SKEW_AGG hint back on an aggregate that analysis
 * rebuilt without it (SQL aggregates, whose aliases and HAVING clauses are resolved after the
 * hint was attached).
 */
case class RestoreSkewAggHints(session: SparkSession) extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = {
    val restored = plan.resolveOperatorsDown {
      case p if p.getTagValue(SkewAggHints.Tag).isDefined =>
        val hint = p.getTagValue(SkewAggHints.Tag).get
        SkewAggHints.attach(p, hint).getOrElse {
          SkewAggHints.tagWindows(p, hint) // (a SELECT's windows: extracted by now)
          p
        }
    }
    AggregateHintCarrier.analyzed(restored)
    restored
  }
}
