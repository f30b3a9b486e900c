package org.apache.spark.sql.skewagg

import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.skewagg.explain.LeftAloneReasons

/**
 * What a plan records that contradicts itself ([[SkewAggDecision.contradictions]]): about each
 * final aggregate (the records of all its phases, as the explanation reads them) and about every
 * other node, subqueries included; each as "rewritten: ... / left alone: ...". A rule that
 * changed its mind when adaptive execution re-planned leaves one.
 */
object RecordedContradictions {

  def in(plan: SparkPlan): Seq[String] = PlanNodes.collectWithSubqueries(plan) {
    case agg if LeftAloneReasons.isFinalAggregate(agg) =>
      SkewAggDecision.contradictions(LeftAloneReasons.recordedAbout(agg))
    case node => SkewAggDecision.contradictions(RecordedDecisions.aboutAggregate(node))
  }.flatten.distinct.map { case (refused, rewritten) => s"${rewritten.text} / ${refused.text}" }
}
