package org.apache.spark.sql.skewagg

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, PythonUDAF}
import org.apache.spark.sql.catalyst.planning.PhysicalAggregation
import org.apache.spark.sql.catalyst.plans.{Inner, JoinType, LeftAnti, LeftOuter, LeftSemi, RightOuter}
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, Join, LogicalPlan, Project}
import org.apache.spark.sql.catalyst.rules.Rule

/**
 * Logical rule (pre-CBO batch, after operator optimization).
 *
 * Matches: `Aggregate(keys, aggs)` over a join (directly or through a column-pruning Project)
 * when the aggregate carries the SKEW_AGG hint, every aggregate function reads only one side's
 * columns (the aggregated side), and no row of the other side can reach the aggregate without a
 * match: inner joins; left outer, left semi and left anti joins aggregating the left side; right
 * outer joins aggregating the right side.
 *
 * Produces: `FinalAggregate(keys, aggs)` over the join of `PartialAggregate(S-keys, aggs, S)` with
 * the other side, where S-keys are the aggregated side's grouping columns and the columns the join
 * condition reads from it. A hot key's rows collapse to one row per upstream task before the
 * join's shuffle. Exact for every partially aggregatable function: a partial buffer joined to m
 * rows is merged m times, which is what aggregating each of its rows m times gives.
 *
 * Refuses when skewagg or `spark.skewagg.join.localAggregate.enabled` is off, the aggregate has
 * no SKEW_AGG hint (it can cost more than it saves before a selective join, so it needs that
 * evidence), has DISTINCT or Python aggregates, groups by computed expressions, the Project in
 * between computes columns, or the join type and aggregated side do not match as above.
 */
case class LocalAggregateBeforeJoin(session: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = {
    if (!SkewAggConf.enabled(conf, SkewAggConf.JOIN_LOCAL_AGGREGATE_ENABLED)) return plan
    plan.transformUp {
      case agg: Aggregate if SkewAggHints.forced(agg) && !agg.isStreaming =>
        rewrite(agg).getOrElse(agg)
    }
  }

  private def rewrite(agg: Aggregate): Option[LogicalPlan] = agg match {
    case PhysicalAggregation(grouping, aggregates, result, _)
        if grouping.nonEmpty && grouping.forall(_.isInstanceOf[Attribute]) &&
          aggregates.nonEmpty && !aggregates.exists(_.isDistinct) &&
          !aggregates.exists(_.aggregateFunction.isInstanceOf[PythonUDAF]) =>
      joinBelow(agg.child).flatMap { join =>
        val aggregateRefs = AttributeSet(aggregates.flatMap(_.references))
        aggregatedSide(join, aggregateRefs).map { side =>
          val s = if (side == "left") join.left else join.right
          val conditionRefs = join.condition.map(_.references).getOrElse(AttributeSet.empty)
          val keys = (grouping.map(_.toAttribute) ++ conditionRefs.toSeq)
            .filter(s.outputSet.contains).distinct
          val partial = PartialAggregate(keys, aggregates, s)
          val newJoin =
            if (side == "left") join.copy(left = partial) else join.copy(right = partial)
          FinalAggregate(grouping, aggregates, result, newJoin)
        }
      }
    case _ => None
  }

  private def joinBelow(plan: LogicalPlan): Option[Join] = plan match {
    case j: Join => Some(j)
    case p: Project if p.projectList.forall(_.isInstanceOf[Attribute]) => joinBelow(p.child)
    case _ => None
  }

  /** "left" or "right": the side whose rows the aggregate functions read, when that is exact. */
  private def aggregatedSide(join: Join, aggregateRefs: AttributeSet): Option[String] = {
    val readsOnlyLeft = aggregateRefs.subsetOf(join.left.outputSet)
    val readsOnlyRight = aggregateRefs.subsetOf(join.right.outputSet)
    val leftOk = readsOnlyLeft && leftMayAggregate(join.joinType)
    val rightOk = readsOnlyRight && rightMayAggregate(join.joinType)
    if (leftOk && rightOk) {
      // count(*)-style aggregates read neither side: aggregate the larger one.
      Some(if (join.left.stats.sizeInBytes >= join.right.stats.sizeInBytes) "left" else "right")
    } else if (leftOk) Some("left") else if (rightOk) Some("right") else None
  }

  private def leftMayAggregate(t: JoinType): Boolean = t match {
    case Inner | LeftOuter | LeftSemi | LeftAnti => true
    case _ => false
  }

  private def rightMayAggregate(t: JoinType): Boolean = t match {
    case Inner | RightOuter => true
    case _ => false
  }
}
