package org.apache.spark.sql.skewagg.localagg

import org.apache.spark.sql.catalyst.expressions.{Expression, NamedExpression}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.plans.{Inner, LeftAnti, LeftOuter, LeftSemi, RightOuter}
import org.apache.spark.sql.execution.{ProjectExec, SparkPlan}
import org.apache.spark.sql.execution.aggregate.{AggUtils, BaseAggregateExec}
import org.apache.spark.sql.execution.joins.ShuffledJoin
import org.apache.spark.sql.skewagg.PartialAggregates

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
