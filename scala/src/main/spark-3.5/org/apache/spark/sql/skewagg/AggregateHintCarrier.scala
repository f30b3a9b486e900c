package org.apache.spark.sql.skewagg

import java.util.{Collections, WeakHashMap}

import org.apache.spark.sql.catalyst.expressions.{ExprId, NamedExpression}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, LogicalPlan}
import org.apache.spark.sql.catalyst.trees.TreeNodeTag

/**
 * Where a skewagg hint rides on a logical aggregate on Spark 3.5, whose `Aggregate` has no hint
 * field. Two carriers:
 *  - a tag on the aggregate node, which analysis and the optimizer keep where a rule rewrites
 *    the aggregate itself;
 *  - the result ids of the aggregate's aggregate functions (`AggregateExpression.resultId`),
 *    given fresh ids when the hint is put on, so that no other plan shares them. The optimizer
 *    keeps them where it rebuilds the aggregate from its parent (an output pruned, a projection
 *    or a filter merged into it), which drops the tag.
 * An aggregate is hinted when it has the tag or one of the hinted result ids. An aggregate none
 * of whose aggregate functions is used (only its grouping keys are read) can lose its hint: the
 * README's support table says so.
 */
object AggregateHintCarrier {

  /** What [[SkewAggHint]] extends: any object (3.5 has no `AggregateHint`). */
  type Carried = AnyRef

  private val Tag = TreeNodeTag[SkewAggHint]("skewagg.aggregateHint")

  /**
   * Hints by result id. Weak keys: an entry lives as long as a plan holds the id (every copy of
   * the aggregate expression holds the same `ExprId` object).
   */
  private val byResultId =
    Collections.synchronizedMap(new WeakHashMap[ExprId, SkewAggHint]())

  def get(agg: Aggregate): Option[SkewAggHint] = agg.getTagValue(Tag).orElse {
    resultIds(agg).iterator.map(id => Option(byResultId.get(id))).collectFirst {
      case Some(h) => h
    }
  }

  /**
   * A copy of `agg` carrying `hint`: its aggregate functions get result ids of their own (the
   * aggregate may be shared with an unhinted DataFrame), which are registered, and the tag.
   */
  def put(agg: Aggregate, hint: SkewAggHint): Aggregate = {
    val own = agg.transformExpressions {
      case e: AggregateExpression => e.copy(resultId = NamedExpression.newExprId)
    }
    val copy = if (own eq agg) agg.copy() else own
    resultIds(copy).foreach(id => byResultId.put(id, hint))
    copy.setTagValue(Tag, hint)
    copy
  }

  /**
   * Analysis is done: the aggregate functions that analysis added to a hinted aggregate since
   * the hint was put on (HAVING, ORDER BY) are registered too.
   */
  def analyzed(plan: LogicalPlan): Unit = plan.foreach {
    case a: Aggregate => get(a).foreach(h => resultIds(a).foreach(id => byResultId.put(id, h)))
    case _ =>
  }

  private def resultIds(agg: Aggregate): Seq[ExprId] =
    agg.aggregateExpressions.flatMap(_.collect { case e: AggregateExpression => e.resultId })
}
