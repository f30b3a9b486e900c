package org.apache.spark.sql.skewagg.localagg

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet, PythonUDAF}
import org.apache.spark.sql.catalyst.expressions.aggregate.{Partial, TypedImperativeAggregate}
import org.apache.spark.sql.catalyst.plans.logical.{
  Aggregate, Expand, Filter, LogicalPlan, Project, RepartitionByExpression
}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.execution.{PlanLater, SparkPlan, SparkStrategy}
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.execution.exchange.{
  REPARTITION_BY_COL, REPARTITION_BY_NUM, ShuffleExchangeExec
}
import org.apache.spark.sql.skewagg.{
  SessionStates, SkewAggConf, SkewAggHints, SkewAggLocalStageExec
}
import org.apache.spark.sql.skewagg.SkewAggDecision.Rewritten
import org.apache.spark.sql.skewagg.localagg.PartialAggregateBeforeRepartition.Rewrite

/**
 * Matches: `Aggregate(keys, aggs)` over a user `RepartitionByExpression` that hashes on expressions
 * reading only grouping attributes (`df.repartition(k).groupBy(k, ...)`,
 * `DISTRIBUTE BY k ... GROUP BY k`), directly or through row-local operators (Project, Filter,
 * Expand, as multiple DISTINCTs plan) that pass those attributes through unchanged: such operators
 * commute with a hash repartition on them. Vanilla Spark shuffles every row on k and runs partial
 * and final aggregation in the same reduce task, so a hot key's rows all land in one task.
 *
 * Produces: Spark's own aggregate plan for `Aggregate(keys, aggs, child)`, with the user's
 * exchange (same partitioning, partition count, origin and advisory size) moved to just above
 * the bottom partial aggregate:
 *   final aggregate <- [distinct phases] <- Exchange(user's partitioning) <- partial <- child
 * The exchange then moves at most one row per key and map task, never more rows than before, and
 * the aggregate's output keeps the user's partitioning. With the SKEW_AGG hint the partial
 * aggregate is Spark's; without it, it is a [[FlushingPartialAggregateExec]]: on many uniformly
 * spread keys Spark's partial aggregate reduces nothing and costs a hash-aggregation pass
 * (docs/experiments.md has the measurement), while the flushing one merges only the
 * keys that repeat and passes the other rows through.
 *
 * Refuses (leaves the plan to Spark, and the skewed case to [[SplitSkewedShuffleBelowAggregate]] at
 * run time) when skewagg or `spark.skewagg.repartition.enabled` is off, the aggregate has the
 * NO_SKEW_AGG hint, or no SKEW_AGG hint and `spark.skewagg.repartition.localAggregate.enabled` off
 * or a holistic function (its partial buffer is as large as its input), the plan is streaming, an
 * aggregate is a Python UDAF, the aggregate has no grouping keys, the repartition is by range or
 * round robin, a partition expression reads a column that is not a grouping attribute or is
 * nondeterministic, or an operator in between redefines a key or is nondeterministic.
 */
case class PartialAggregateBeforeRepartition(session: SparkSession) extends SparkStrategy {

  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case agg: Aggregate
        if SkewAggConf.enabled(session.sessionState.conf, SkewAggConf.REPARTITION_ENABLED) &&
          !agg.isStreaming && agg.groupingExpressions.nonEmpty && !SkewAggHints.forbidden(agg) &&
          (SkewAggHints.forced(agg) ||
            session.sessionState.conf.getConf(SkewAggConf.REPARTITION_LOCAL_AGGREGATE_ENABLED) &&
            !agg.aggregateExpressions.exists(
              _.exists(_.isInstanceOf[TypedImperativeAggregate[_]]))) &&
          !agg.aggregateExpressions.exists(_.exists(_.isInstanceOf[PythonUDAF])) =>
      val groupingAttributes =
        AttributeSet(agg.groupingExpressions.collect { case a: Attribute => a })
      userRepartitionBelow(agg.child, groupingAttributes).toSeq.flatMap { repartition =>
        val withoutRepartition = agg.child.transformUp {
          case r: RepartitionByExpression if r eq repartition => r.child
        }
        val planner = SessionStates.of(session).planner
        planner.Aggregation(agg.copy(child = withoutRepartition))
          .headOption
          .flatMap(moveExchangeAbovePartial(_, repartition, flushing = !SkewAggHints.forced(agg)))
      }
    case _ => Nil
  }

  /**
   * The user repartition feeding `plan` through row-local operators, when it hashes on
   * deterministic expressions of `keys` and every operator on the way passes those unchanged.
   */
  private def userRepartitionBelow(
      plan: LogicalPlan,
      keys: AttributeSet): Option[RepartitionByExpression] = {
    val (path, bottom) = rowLocalPath(plan)
    bottom match {
      case r: RepartitionByExpression =>
        r.partitioning match {
          case HashPartitioning(expressions, _)
              if expressions.nonEmpty &&
                expressions.forall(e => e.deterministic && e.references.subsetOf(keys)) =>
            val partitionKeys = AttributeSet(expressions.flatMap(_.references))
            if (path.forall(passesThrough(_, partitionKeys))) Some(r) else None
          case _ => None
        }
      case _ => None
    }
  }

  /** The row-local operators from `plan` down, and the first node below them. */
  private def rowLocalPath(plan: LogicalPlan): (List[LogicalPlan], LogicalPlan) = plan match {
    case _: Project | _: Filter | _: Expand =>
      val (path, bottom) = rowLocalPath(plan.children.head)
      (plan :: path, bottom)
    case other => (Nil, other)
  }

  /** `node` is deterministic and outputs each of `keys` as that same input attribute. */
  private def passesThrough(node: LogicalPlan, keys: AttributeSet): Boolean = node match {
    case p: Project =>
      keys.subsetOf(AttributeSet(p.projectList.collect { case a: Attribute => a }))
    case f: Filter => f.condition.deterministic
    case e: Expand => keys.forall { key =>
        val i = e.output.indexWhere(_.exprId == key.exprId)
        i >= 0 && e.projections.forall(_(i) match {
          case a: Attribute => a.exprId == key.exprId
          case _ => false
        })
      }
    case _ => false
  }

  /** Inserts the user's exchange between the bottom aggregate and the aggregates above it. */
  private def moveExchangeAbovePartial(
      planned: SparkPlan,
      repartition: RepartitionByExpression,
      flushing: Boolean): Option[SparkPlan] = {
    val origin =
      if (repartition.optNumPartitions.isEmpty) REPARTITION_BY_COL else REPARTITION_BY_NUM
    var moved = false
    val rewritten = planned.transformUp {
      case bottom: BaseAggregateExec
          if bottom.child.isInstanceOf[PlanLater] &&
            bottom.aggregateExpressions.forall(_.mode == Partial) =>
        moved = true
        val local = if (flushing) {
          SkewAggLocalStageExec.mark(
            FlushingPartialAggregateExec.from(bottom, repartition.partitionExpressions),
            Rewritten(s"flushing $Rewrite", Rewrite))
        } else {
          SkewAggLocalStageExec.mark(bottom, Rewritten(Rewrite, Rewrite))
        }
        ShuffleExchangeExec(
          repartition.partitioning,
          local,
          origin,
          repartition.optAdvisoryPartitionSize)
    }
    // Only a chain with an aggregate above the moved exchange is a local-global plan.
    if (moved && !rewritten.isInstanceOf[ShuffleExchangeExec]) Some(rewritten) else None
  }
}

object PartialAggregateBeforeRepartition {

  /** The rewrite's name in its records (`SkewAggDecision.Rewritten` and `Refused`). */
  val Rewrite = "partial aggregate before the user's repartition"
}
