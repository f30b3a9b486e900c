package org.apache.spark.sql.skewagg.localagg

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.{SparkPlan, SparkStrategy}
import org.apache.spark.sql.execution.aggregate.{AggUtils, BaseAggregateExec}
import org.apache.spark.sql.skewagg.{PartialAggregates, SkewAggLocalStageExec}
import org.apache.spark.sql.skewagg.SkewAggDecision.Rewritten

/**
 * Physical planning of [[PartialAggregate]] with Spark's own aggregate operators (hash,
 * object-hash or sort aggregate, as Spark would choose), built by
 * `AggUtils.planAggregateWithoutDistinct`: its partial half. [[FinalAggregates.plan]] builds the
 * final half above the join.
 *
 * Not gated by `spark.skewagg.enabled`: it creates no rewrite, it only plans the nodes that
 * [[LocalAggregateBeforeJoin]] puts below a join while it plans that join.
 */
case class PlanPartialAggregates(session: SparkSession) extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case PartialAggregate(grouping, aggregates, child, flushing, shuffleKeys) =>
      val planned = AggUtils.planAggregateWithoutDistinct(
        PartialAggregates.normalizedKeys(grouping),
        aggregates,
        grouping.map(_.toAttribute),
        planLater(child))
      val what = if (aggregates.isEmpty) "deduplication" else "partial aggregate"
      val merged = aggregates.nonEmpty && shuffleKeys.nonEmpty
      def rewritten(done: String) =
        Rewritten(s"$done before the join", LocalAggregateBeforeJoin.Rewrite)
      planned.headOption.collect { case sparkFinal: BaseAggregateExec =>
        val local = sparkFinal.children.head match {
          case partial: BaseAggregateExec if flushing =>
            val flushingAggregate =
              FlushingPartialAggregateExec.from(partial, shuffleKeys, sketchKeys = merged)
            SkewAggLocalStageExec.mark(flushingAggregate, rewritten(s"flushing $what"))
          case partial => SkewAggLocalStageExec.mark(partial, rewritten(what))
        }
        if (!merged) local
        else {
          val merge = PartialAggregates.partialMerge(sparkFinal, Some(shuffleKeys), local)
          merge.setTagValue(DropUnneededMergeAfterShuffle.MergeAfterJoinShuffle, ())
          merge
        }
      }.toSeq
    case _ => Nil
  }
}
