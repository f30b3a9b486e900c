package org.apache.spark.sql.skewagg

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, NamedExpression}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.execution.{PlanLater, ProjectExec, SparkPlan, SparkStrategy}
import org.apache.spark.sql.execution.aggregate.{AggUtils, BaseAggregateExec}

/**
 * The partial half of an aggregate as a logical operator: groups `child` by `groupingExpressions`
 * and outputs, per group, the keys and the aggregation buffers of `aggregateExpressions`, which a
 * [[FinalAggregate]] above merges (with no aggregate expressions: the distinct keys). Created by
 * [[LocalAggregateBeforeJoin]]. With `flushing`, a group may be emitted in several rows
 * ([[FlushingPartialAggregateExec]]), which judges heavy keys by `shuffleKeys` as well (the join
 * keys of its side when Spark will shuffle that side on them, else Nil). With shuffle keys and
 * aggregate expressions, the partial rows are shuffled on `shuffleKeys`, the shuffle the join
 * needs anyway, and merged there (PartialMerge), so the join reads one row per group instead of
 * one per group and upstream task (or per input row, where the flushing aggregate passed rows
 * through). A deduplication (no aggregate expressions) is not merged: Spark's own plan above the
 * join deduplicates (keys, DISTINCT columns) again, so a merge after the shuffle would hash the
 * rows twice (benchmark, DISTINCT scenario, UNIFORM: 1.14x vanilla's wall time with the merge;
 * 1.00 without it, earlier run).
 */
case class PartialAggregate(
    groupingExpressions: Seq[NamedExpression],
    aggregateExpressions: Seq[AggregateExpression],
    child: LogicalPlan,
    flushing: Boolean,
    shuffleKeys: Seq[Attribute]) extends UnaryNode {
  override def output: Seq[Attribute] = groupingExpressions.map(_.toAttribute) ++
    aggregateExpressions.flatMap(_.aggregateFunction.inputAggBufferAttributes)
  override protected def withNewChildInternal(newChild: LogicalPlan): PartialAggregate =
    copy(child = newChild)
}

/**
 * The final half: merges the buffers a [[PartialAggregate]] below produced (possibly carried
 * through a join, which repeats a buffer once per matching row) and evaluates
 * `resultExpressions` over the grouping attributes and aggregate results.
 */
case class FinalAggregate(
    groupingExpressions: Seq[NamedExpression],
    aggregateExpressions: Seq[AggregateExpression],
    resultExpressions: Seq[NamedExpression],
    child: LogicalPlan) extends UnaryNode {
  override def output: Seq[Attribute] = resultExpressions.map(_.toAttribute)
  override def producedAttributes: AttributeSet =
    AttributeSet(aggregateExpressions.map(_.resultAttribute))
  override def references: AttributeSet = AttributeSet(
    groupingExpressions.flatMap(_.references) ++
      aggregateExpressions.flatMap(_.aggregateFunction.inputAggBufferAttributes)) ++
    (AttributeSet(resultExpressions.flatMap(_.references)) -- producedAttributes --
      groupingExpressions.map(_.toAttribute))
  override protected def withNewChildInternal(newChild: LogicalPlan): FinalAggregate =
    copy(child = newChild)
}

/**
 * Physical planning of [[PartialAggregate]] and [[FinalAggregate]] with Spark's own aggregate
 * operators (hash, object-hash or sort aggregate, as Spark would choose), built by
 * `AggUtils.planAggregateWithoutDistinct`: its partial half for the one, its final half for the
 * other. Spark's final aggregate reads the buffers by position (they must be the last input
 * columns, right after the grouping keys), so it reads a projection of exactly
 * `grouping keys ++ buffers` of its child, which may be a join with more columns.
 *
 * Not gated by `spark.skewagg.enabled`: it creates no rewrite, it only plans nodes that an enabled
 * rule put in an optimized plan, which must stay plannable if the switch flips afterwards.
 */
case class PlanPartialAndFinalAggregates(session: SparkSession) extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case PartialAggregate(grouping, aggregates, child, flushing, shuffleKeys) =>
      val planned = AggUtils.planAggregateWithoutDistinct(
        PartialAggregates.normalizedKeys(grouping), aggregates, grouping.map(_.toAttribute), planLater(child))
      val what = if (aggregates.isEmpty) "deduplication" else "partial aggregate"
      planned.headOption.collect { case sparkFinal: BaseAggregateExec =>
        val local = sparkFinal.children.head match {
          case partial: BaseAggregateExec if flushing =>
            SkewAggLocalStageExec.mark(FlushingPartialAggregateExec.from(partial, shuffleKeys),
              s"flushing $what before the join")
          case partial => SkewAggLocalStageExec.mark(partial, s"$what before the join")
        }
        if (aggregates.isEmpty || shuffleKeys.isEmpty) local
        else PartialAggregates.partialMerge(sparkFinal, shuffleKeys, local)
      }.toSeq
    case FinalAggregate(grouping, aggregates, result, child) =>
      val planned = AggUtils.planAggregateWithoutDistinct(
        PartialAggregates.normalizedKeys(grouping), aggregates, result, PlanLater(child))
      // Keys normalized here as Spark's partial aggregate would have (-0.0/0.0, NaNs): the final
      // aggregate groups its input keys as they come.
      val layout = PartialAggregates.normalizedKeys(grouping) ++
        aggregates.flatMap(_.aggregateFunction.inputAggBufferAttributes)
      planned.headOption.map(_.withNewChildren(Seq(ProjectExec(layout, planLater(child))))).toSeq
    case _ => Nil
  }
}
