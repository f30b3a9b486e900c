package org.apache.spark.sql.skewagg

import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, AggregateHint, LogicalPlan}

/**
 * Where a skewagg hint rides on a logical aggregate: Spark 4.0+'s `Aggregate.hint` field, which
 * every copy of the aggregate keeps through analysis and the optimizer.
 */
object AggregateHintCarrier {

  /** What [[SkewAggHint]] extends: a hint the aggregate's `hint` field holds. */
  type Carried = AggregateHint

  def get(agg: Aggregate): Option[SkewAggHint] = agg.hint.collect { case h: SkewAggHint => h }

  /** A copy of `agg` carrying `hint`. */
  def put(agg: Aggregate, hint: SkewAggHint): Aggregate = agg.copy(hint = Some(hint))

  /** Analysis is done: Spark 4.0+ needs nothing more (the field is kept by every copy). */
  def analyzed(plan: LogicalPlan): Unit = ()
}
