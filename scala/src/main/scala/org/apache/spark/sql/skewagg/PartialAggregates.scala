package org.apache.spark.sql.skewagg

import org.apache.spark.sql.catalyst.expressions.{Alias, Expression, NamedExpression}
import org.apache.spark.sql.catalyst.expressions.aggregate.{Partial, PartialMerge}
import org.apache.spark.sql.catalyst.optimizer.NormalizeFloatingNumbers
import org.apache.spark.sql.execution.{
  ExpandExec, FilterExec, InputAdapter, ProjectExec, SortExec, SparkPlan, WholeStageCodegenExec
}
import org.apache.spark.sql.execution.adaptive.{
  AdaptiveSparkPlanExec, AQEShuffleReadExec, QueryStageExec
}
import org.apache.spark.sql.execution.exchange.{ReusedExchangeExec, ShuffleExchangeLike}
import org.apache.spark.sql.execution.aggregate.{
  BaseAggregateExec, HashAggregateExec, ObjectHashAggregateExec, SortAggregateExec
}

/**
 * An operator of skewagg's that aggregates input rows partially, as Spark's Partial-mode
 * aggregates do: it reads input rows, not buffers, and emits per-key partial buffers that a
 * final aggregate merges ([[PartialAggregates.isPartial]] and
 * [[PartialAggregates.isBottomPartial]] hold for it).
 */
trait BottomPartialAggregateExec { self: SparkPlan => }

/** Recognising partial aggregates, and turning Spark's final half into a merge of partials. */
object PartialAggregates {

  /** `plan` without the wrappers that codegen and adaptive execution put around operators. */
  def unwrap(plan: SparkPlan): SparkPlan = plan match {
    case w: WholeStageCodegenExec => unwrap(w.child)
    case i: InputAdapter => unwrap(i.child)
    case r: AQEShuffleReadExec => unwrap(r.child)
    case s: QueryStageExec => unwrap(s.plan)
    case m: SkewAggLocalStageExec => unwrap(m.child)
    case other => other
  }

  /** `plan` without whole-stage codegen's wrappers only. */
  def withoutCodegen(plan: SparkPlan): SparkPlan = plan match {
    case w: WholeStageCodegenExec => withoutCodegen(w.child)
    case i: InputAdapter => withoutCodegen(i.child)
    case other => other
  }

  /**
   * The nodes below the final aggregate `agg` down to the next final aggregate: the phases of
   * `agg` (partial aggregates, exchanges, stages, markers), through adaptive plans, query stages
   * and reused exchanges.
   */
  def phasesBelow(agg: SparkPlan): Seq[SparkPlan] = agg.children.flatMap(phasesFrom)

  private def phasesFrom(plan: SparkPlan): Seq[SparkPlan] = plan match {
    case a: BaseAggregateExec if !isPartial(a) => Nil
    case _: SkewAggAggregateExec => Nil
    case a: AdaptiveSparkPlanExec => phasesFrom(a.executedPlan)
    case s: QueryStageExec => s +: phasesFrom(s.plan)
    case r: ReusedExchangeExec => r +: phasesFrom(r.child)
    case other => other +: other.children.flatMap(phasesFrom)
  }

  /** The bottom partial aggregate that feeds `agg` through exchanges, stages and wrappers. */
  def bottomPartialBelow(agg: SparkPlan): Option[SparkPlan] = {
    def down(plan: SparkPlan): Option[SparkPlan] = plan match {
      case a: BaseAggregateExec if isPartial(a) => down(a.child).orElse(Some(a))
      case _: WholeStageCodegenExec | _: InputAdapter | _: AQEShuffleReadExec |
          _: SkewAggLocalStageExec | _: ShuffleExchangeLike | _: SortExec =>
        down(plan.children.head)
      case s: QueryStageExec => down(s.plan)
      case r: ReusedExchangeExec => down(r.child)
      case p if belowRowLocal(p) ne p => down(belowRowLocal(p))
      case _ => None
    }
    agg.children.headOption.flatMap(down)
  }

  /** The first node below `plan` that is not a wrapper, a sort or a row-local operator. */
  def inputBelow(plan: SparkPlan): SparkPlan = plan match {
    case s: SortExec => inputBelow(s.child)
    case w: WholeStageCodegenExec => inputBelow(w.child)
    case i: InputAdapter => inputBelow(i.child)
    case r: AQEShuffleReadExec => inputBelow(r.child)
    case p if belowRowLocal(p) ne p => inputBelow(belowRowLocal(p))
    case other => other
  }

  /** The first node below `plan` that is not a row-local Project, Filter or Expand. */
  def belowRowLocal(plan: SparkPlan): SparkPlan = plan match {
    case p: ProjectExec => belowRowLocal(p.child)
    case f: FilterExec => belowRowLocal(f.child)
    case e: ExpandExec => belowRowLocal(e.child)
    case other => other
  }

  /**
   * True for an aggregate that emits per-key partial buffers rather than final results: every
   * aggregate expression is Partial or PartialMerge, or, with no aggregate expressions (a
   * grouping-only aggregate), it has no distribution requirement (the bottom, partial one).
   */
  def isPartial(plan: SparkPlan): Boolean = unwrap(plan) match {
    case agg: BaseAggregateExec if agg.aggregateExpressions.nonEmpty =>
      agg.aggregateExpressions.forall(e => e.mode == Partial || e.mode == PartialMerge)
    case agg: BaseAggregateExec => agg.requiredChildDistributionExpressions.isEmpty
    case _: BottomPartialAggregateExec => true
    case _ => false
  }

  /**
   * A partial aggregate that reads input rows, not partial buffers: every aggregate expression is
   * Partial, or, grouping only, it has no distribution requirement (the bottom step). Only such an
   * aggregate may read split input: above it, Spark's DISTINCT plans merge the partials of each
   * (keys, DISTINCT value) group (PartialMerge) and then count the value once per row, so that
   * merge needs each group whole (split reads of it counted values twice: docs/testing.md).
   */
  def isBottomPartial(plan: SparkPlan): Boolean = unwrap(plan) match {
    case agg: BaseAggregateExec if agg.aggregateExpressions.nonEmpty =>
      agg.aggregateExpressions.forall(_.mode == Partial)
    case agg: BaseAggregateExec => agg.requiredChildDistributionExpressions.isEmpty
    case _: BottomPartialAggregateExec => true
    case _ => false
  }

  /**
   * `finalAggregate` (the final half Spark planned for an aggregate) turned into a PartialMerge
   * aggregate over `child` (partial rows: keys and buffers): it merges the partial rows of each
   * group into one and outputs keys and buffers again, for another final aggregate further up.
   * With a `distribution` (a subset of the grouping keys) it requires its input clustered by it,
   * so the exchange Spark adds below it is one that the operator above can reuse; without one
   * it merges each task's rows where they are, as Spark's partial aggregate does.
   */
  def partialMerge(
      finalAggregate: BaseAggregateExec,
      distribution: Option[Seq[Expression]],
      child: SparkPlan): SparkPlan = {
    val merging =
      finalAggregate.aggregateExpressions.map(_.copy(mode = PartialMerge, filter = None))
    val keys = finalAggregate.groupingExpressions.map(_.toAttribute)
    val result = keys ++ merging.flatMap(_.aggregateFunction.inputAggBufferAttributes)
    val buffers = merging.map(_.resultAttribute)
    finalAggregate match {
      case a: HashAggregateExec => a.copy(
          requiredChildDistributionExpressions = distribution,
          aggregateExpressions = merging,
          aggregateAttributes = buffers,
          resultExpressions = result,
          child = child)
      case a: ObjectHashAggregateExec => a.copy(
          requiredChildDistributionExpressions = distribution,
          aggregateExpressions = merging,
          aggregateAttributes = buffers,
          resultExpressions = result,
          child = child)
      case a: SortAggregateExec => a.copy(
          requiredChildDistributionExpressions = distribution,
          aggregateExpressions = merging,
          aggregateAttributes = buffers,
          resultExpressions = result,
          child = child)
      case other => throw new IllegalStateException(s"not a Spark aggregate: ${other.nodeName}")
    }
  }

  /** Grouping keys as Spark's Aggregation strategy plans them: -0.0/0.0 and NaNs group together. */
  def normalizedKeys(grouping: Seq[NamedExpression]): Seq[NamedExpression] = grouping.map { e =>
    NormalizeFloatingNumbers.normalize(e) match {
      case n: NamedExpression => n
      case other: Expression => Alias(other, e.name)(exprId = e.exprId)
    }
  }
}
