package org.apache.spark.sql.skewagg

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, NamedExpression}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.execution.{ProjectExec, SparkPlan, SparkStrategy}
import org.apache.spark.sql.execution.aggregate.{AggUtils, BaseAggregateExec}

/**
 * The partial half of an aggregate as a logical operator: groups `child` by `groupingExpressions`
 * and outputs, per group, the keys and the aggregation buffers of `aggregateExpressions`, which the
 * final half above the join ([[FinalAggregates]]) merges (with no aggregate expressions: the
 * distinct keys). Created by [[LocalAggregateBeforeJoin]] below the join it plans, and planned
 * there: it never stands in a plan that an optimizer rule reads. With `flushing`, a group may be
 * emitted in several rows ([[FlushingPartialAggregateExec]]), which judges heavy keys by
 * `shuffleKeys` as well (the join keys of its side when Spark will shuffle that side on them, else
 * Nil). With shuffle keys and aggregate expressions, the partial rows are shuffled on
 * `shuffleKeys`, the shuffle the join needs anyway, and merged there (PartialMerge), so the join
 * reads one row per group instead of one per group and upstream task (or per input row, where the
 * flushing aggregate passed rows through). A deduplication (no aggregate expressions) is not
 * merged: Spark's own plan above the join deduplicates (keys, DISTINCT columns) again, so a merge
 * after the shuffle would hash the rows twice (benchmark, DISTINCT scenario, UNIFORM: 1.14x
 * vanilla's wall time with the merge; 1.00 without it, earlier run).
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
    case _ => Nil
  }
}

/** The final half of an aggregate whose partial half [[PartialAggregate]] ran below a join. */
object FinalAggregates {
  /**
   * Spark's final aggregate (hash, object-hash or sort, as Spark would choose) merging the
   * buffers in `child`'s rows (a join of partial rows, which repeats a buffer once per matching
   * row) and evaluating `result` over the grouping attributes and aggregate results. Spark's
   * final aggregate reads the buffers by position (right after the grouping keys), so it reads a
   * projection of exactly `grouping keys ++ buffers` of `child`.
   */
  def plan(
      grouping: Seq[NamedExpression],
      aggregates: Seq[AggregateExpression],
      result: Seq[NamedExpression],
      child: SparkPlan): Option[SparkPlan] = {
    // Keys normalized here as Spark's partial aggregate would have (-0.0/0.0, NaNs): the final
    // aggregate groups its input keys as they come.
    val keys = PartialAggregates.normalizedKeys(grouping)
    val layout = keys ++ aggregates.flatMap(_.aggregateFunction.inputAggBufferAttributes)
    AggUtils.planAggregateWithoutDistinct(keys, aggregates, result, child)
      .headOption.map(_.withNewChildren(Seq(ProjectExec(layout, child))))
  }
}
