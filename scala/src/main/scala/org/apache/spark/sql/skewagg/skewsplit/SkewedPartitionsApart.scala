package org.apache.spark.sql.skewagg.skewsplit

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.execution.{PartialReducerPartitionSpec, SortExec, SparkPlan, UnionExec}
import org.apache.spark.sql.execution.adaptive.{AQEShuffleReadExec, QueryStageExec}
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.skewagg.PartialAggregates

/**
 * Aggregates over a skew-split read run apart on the skewed partitions' pieces and on the rest:
 * `top` (the highest of the aggregates, sorts and row-local operators above the read in its
 * stage) twice in a union, once over the read's tasks that read whole partitions, where every
 * aggregate runs in place as before (each task holds every row of its keys:
 * [[WholeShufflePartitions]]), and once over the tasks that read pieces of the split partitions,
 * whose aggregates need exchanges between their halves (added by the caller).
 *
 * For an aggregate whose first step groups by more than the shuffle's keys (a DISTINCT's), the
 * exchange of that step's groups is then paid for the skewed partitions' rows only.
 */
object SkewedPartitionsApart {

  /** Marks the unions made here; copies of a node keep its tags. */
  private val Union = TreeNodeTag[Unit]("skewagg.skewedPartitionsApart")

  def isUnion(plan: SparkPlan): Boolean = plan.getTagValue(Union).isDefined

  /**
   * `plan` with each final aggregate `top` above a node `is` accepts in its stage replaced by
   * `apart(top, node)`; a union made here is left as it is.
   */
  def where(plan: SparkPlan, is: SparkPlan => Boolean)(
      apart: (SparkPlan, SparkPlan) => SparkPlan): SparkPlan = plan match {
    case u if isUnion(u) => u
    case top: BaseAggregateExec
        if !PartialAggregates.isPartial(top) && inStageBelow(top, is).isDefined =>
      apart(top, inStageBelow(top, is).get)
    case other => other.withNewChildren(other.children.map(where(_, is)(apart)))
  }

  /**
   * The node `is` accepts below the aggregate `top` in its stage, through aggregates, sorts and
   * row-local operators only: each aggregate's distribution is then the shuffle's below, so
   * every group is within one of its partitions.
   */
  private def inStageBelow(top: BaseAggregateExec, is: SparkPlan => Boolean): Option[SparkPlan] = {
    def down(plan: SparkPlan): Option[SparkPlan] = plan match {
      case p if is(p) => Some(p)
      case a: BaseAggregateExec => down(a.child)
      case s: SortExec => down(s.child)
      case p if PartialAggregates.belowRowLocal(p) ne p => down(PartialAggregates.belowRowLocal(p))
      case _ => None
    }
    down(top.child)
  }

  /**
   * The union of `top` with `target` (a node in it) replaced by `whole` and by `pieces`: two
   * plans of `target` over the same skew-split reads (the pieces' plan marked), the first kept to
   * the tasks that read whole partitions, the second to those that read pieces.
   */
  def apply(top: SparkPlan, target: SparkPlan, whole: SparkPlan, pieces: SparkPlan): SparkPlan = {
    val split = pieces.collect {
      case r: AQEShuffleReadExec => r.partitionSpecs.collect {
          case p: PartialReducerPartitionSpec => p.reducerIndex
        }
    }.flatten.toSet
    def tasks(plan: SparkPlan, ofPieces: Boolean): SparkPlan = {
      val kept = plan.transformUp {
        case r: AQEShuffleReadExec => SplitReadTasksExec(r, split, ofPieces)
      }
      top.transformDown { case p if p eq target => kept }
    }
    val union = UnionExec(Seq(tasks(whole, ofPieces = false), tasks(pieces, ofPieces = true)))
    union.setTagValue(Union, ())
    top.logicalLink.foreach(linkTo(union, _))
    union
  }

  /**
   * Links every node of `plan` above its query stages to `link`, the logical plan of the
   * rewritten part. Adaptive execution replaces the logical node of a stage that materializes
   * with the first physical node linked to it; every stage below the union must find the union,
   * not a node of one branch, or re-planning would drop the other branch.
   */
  private def linkTo(plan: SparkPlan, link: LogicalPlan): Unit = plan match {
    case _: QueryStageExec =>
    case other =>
      other.setTagValue(SparkPlan.LOGICAL_PLAN_TAG, link)
      other.children.foreach(linkTo(_, link))
  }
}
