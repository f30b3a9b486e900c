package org.apache.spark.sql.skewagg.localagg

import org.apache.spark.sql.catalyst.expressions.{Attribute, NamedExpression}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}

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
 * vanilla's wall time with the merge; 1.00 without it, earlier run). A flushing aggregate
 * before such a merge sketches the keys it emits, and adaptive execution drops the merge where
 * it would not reduce the rows ([[DropUnneededMergeAfterShuffle]]).
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
