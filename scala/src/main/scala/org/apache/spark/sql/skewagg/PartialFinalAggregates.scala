package org.apache.spark.sql.skewagg

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, AttributeSet, Expression, NamedExpression}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.optimizer.NormalizeFloatingNumbers
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.execution.{PlanLater, ProjectExec, SparkPlan, SparkStrategy}
import org.apache.spark.sql.execution.aggregate.{AggUtils, BaseAggregateExec}
import org.apache.spark.sql.internal.SQLConf

/**
 * The partial half of an aggregate as a logical operator: groups `child` by `groupingExpressions`
 * and outputs, per group, the keys and the aggregation buffers of `aggregateExpressions`, which a
 * [[FinalAggregate]] above merges (with no aggregate expressions: the distinct keys). Created by
 * [[LocalAggregateBeforeJoin]]. With `flushing`, a group may be emitted in several rows
 * ([[FlushingPartialAggregateExec]]).
 */
case class PartialAggregate(
    groupingExpressions: Seq[NamedExpression],
    aggregateExpressions: Seq[AggregateExpression],
    child: LogicalPlan,
    flushing: Boolean) extends UnaryNode {
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
    case PartialAggregate(grouping, aggregates, child, flushing) =>
      val planned = AggUtils.planAggregateWithoutDistinct(
        normalize(grouping), aggregates, grouping.map(_.toAttribute), planLater(child))
      val what = if (aggregates.isEmpty) "deduplication" else "partial aggregate"
      planned.headOption.map(_.children.head).map {
        case partial: BaseAggregateExec if flushing =>
          SkewAggLocalStageExec.mark(FlushingPartialAggregateExec.from(partial,
            SQLConf.get.getConf(SkewAggConf.LOCAL_AGGREGATE_CAPACITY),
            SQLConf.get.getConf(SkewAggConf.LOCAL_AGGREGATE_MIN_REDUCTION)),
            s"flushing $what before the join")
        case partial => SkewAggLocalStageExec.mark(partial, s"$what before the join")
      }.toSeq
    case FinalAggregate(grouping, aggregates, result, child) =>
      val planned = AggUtils.planAggregateWithoutDistinct(
        normalize(grouping), aggregates, result, PlanLater(child))
      val layout = grouping.map(_.toAttribute) ++
        aggregates.flatMap(_.aggregateFunction.inputAggBufferAttributes)
      planned.headOption.map(_.withNewChildren(Seq(ProjectExec(layout, planLater(child))))).toSeq
    case _ => Nil
  }

  /** As Spark's Aggregation strategy does: -0.0/0.0 and NaNs group together. */
  private def normalize(grouping: Seq[NamedExpression]): Seq[NamedExpression] = grouping.map { e =>
    NormalizeFloatingNumbers.normalize(e) match {
      case n: NamedExpression => n
      case other: Expression => Alias(other, e.name)(exprId = e.exprId)
    }
  }
}
