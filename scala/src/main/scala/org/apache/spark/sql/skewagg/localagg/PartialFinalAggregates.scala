package org.apache.spark.sql.skewagg.localagg

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, NamedExpression}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.plans.{Inner, LeftAnti, LeftOuter, LeftSemi, RightOuter}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, UnaryNode}
import org.apache.spark.sql.execution.{ProjectExec, SparkPlan, SparkStrategy}
import org.apache.spark.sql.execution.aggregate.{AggUtils, BaseAggregateExec}
import org.apache.spark.sql.execution.joins.ShuffledJoin
import org.apache.spark.sql.skewagg.{PartialAggregates, SkewAggLocalStageExec}

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
      planned.headOption.collect { case sparkFinal: BaseAggregateExec =>
        val local = sparkFinal.children.head match {
          case partial: BaseAggregateExec if flushing =>
            val flushingAggregate =
              FlushingPartialAggregateExec.from(partial, shuffleKeys, sketchKeys = merged)
            SkewAggLocalStageExec.mark(flushingAggregate, s"flushing $what before the join")
          case partial => SkewAggLocalStageExec.mark(partial, s"$what before the join")
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

/** The final half of an aggregate whose partial half [[PartialAggregate]] ran below a join. */
object FinalAggregates {

  /**
   * Spark's final aggregate (hash, object-hash or sort, as Spark would choose) merging the
   * buffers in `join`'s rows (a join of partial rows, which repeats a buffer once per matching
   * row) and evaluating `result` over the grouping attributes and aggregate results. Spark's
   * final aggregate reads the buffers by position (right after the grouping keys), so it reads a
   * projection of exactly `grouping keys ++ buffers` of `join`.
   *
   * Where the join's rows will not arrive clustered on the grouping keys (grouping by columns
   * that do not hold a side's join keys), Spark shuffles them to the final aggregate: they are
   * merged first where they are (PartialMerge, no distribution), as Spark's own partial
   * aggregate above a join would, so the shuffle moves one row per group and task, not every
   * row the join produced (grouping by a column of few values put all of them in a few tasks).
   */
  def plan(
      grouping: Seq[NamedExpression],
      aggregates: Seq[AggregateExpression],
      result: Seq[NamedExpression],
      join: SparkPlan): Option[SparkPlan] = {
    // Keys normalized here as Spark's partial aggregate would have (-0.0/0.0, NaNs): the final
    // aggregate groups its input keys as they come.
    val keys = PartialAggregates.normalizedKeys(grouping)
    val layout = keys ++ aggregates.flatMap(_.aggregateFunction.inputAggBufferAttributes)
    AggUtils.planAggregateWithoutDistinct(keys, aggregates, result, join).headOption.map {
      case sparkFinal: BaseAggregateExec =>
        val rows = ProjectExec(layout, join)
        val input =
          if (clusteredOn(join, keys)) rows
          else PartialAggregates.partialMerge(sparkFinal, None, rows)
        sparkFinal.withNewChildren(Seq(input))
      case other => other.withNewChildren(Seq(ProjectExec(layout, join)))
    }
  }

  /**
   * A shuffled join's rows are hash-partitioned on the join keys of the side (or sides) whose
   * partitioning it keeps; they are clustered on `keys` when those hold every such join key.
   */
  private def clusteredOn(join: SparkPlan, keys: Seq[Expression]): Boolean = join match {
    case j: ShuffledJoin =>
      val kept = j.joinType match {
        case Inner => Seq(j.leftKeys, j.rightKeys)
        case LeftOuter | LeftSemi | LeftAnti => Seq(j.leftKeys)
        case RightOuter => Seq(j.rightKeys)
        case _ => Nil
      }
      kept.exists(side => side.nonEmpty && side.forall(k => keys.exists(_.semanticEquals(k))))
    case _ => false
  }
}
