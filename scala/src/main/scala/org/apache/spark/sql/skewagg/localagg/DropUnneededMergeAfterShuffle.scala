package org.apache.spark.sql.skewagg.localagg

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.{AQEShuffleReadExec, ShuffleQueryStageExec}
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.skewagg.{
  PartialAggregates, SkewAggConf, RecordedDecisions, SkewAggLocalStageExec
}
import org.apache.spark.sql.skewagg.SkewAggDecision.AtRunTime

/**
 * Adaptive query-stage optimizer rule (runs on each new stage's plan, once every stage it reads
 * has run).
 *
 * Matches: the PartialMerge aggregate that local aggregation before a join puts right after the
 * join's shuffle ([[PlanPartialAggregates]], tagged
 * [[DropUnneededMergeAfterShuffle.MergeAfterJoinShuffle]]), over
 * that shuffle's materialized stage, whose flushing local aggregate sketched the keys it emitted.
 *
 * Produces: when those tasks emitted fewer than `spark.skewagg.localAggregate.minMergeReduction`
 * rows per distinct key, the plan without the merge: the join reads the partial rows as they
 * came, and the final aggregate above merges them as it merges the buffers the join repeats
 * (exact: a buffer joined to m rows is merged m times either way). Keys that are (nearly)
 * unique, such as a table's primary key, then cost no hash aggregation of every row.
 *
 * Records its decision, with the counts, on the local stage's marker
 * ([[SkewAggDecision.AtRunTime]]), which the plan and `skewagg.explain` print.
 * Refuses (keeps the merge) when skewagg or `spark.skewagg.join.localAggregate.enabled` is off,
 * and where the rows would reduce at least that much. Without adaptive execution the merge stays.
 */
case class DropUnneededMergeAfterShuffle(session: SparkSession) extends Rule[SparkPlan] {
  import DropUnneededMergeAfterShuffle.{MergeAfterJoinShuffle, Step}

  override def apply(plan: SparkPlan): SparkPlan = {
    if (!SkewAggConf.enabled(conf, SkewAggConf.JOIN_LOCAL_AGGREGATE_ENABLED)) return plan
    plan.transformUp {
      case merge: BaseAggregateExec if merge.getTagValue(MergeAfterJoinShuffle).isDefined =>
        sketchedStageBelow(merge.child).fold[SparkPlan](merge) { case (marker, rows, keys) =>
          val minReduction = conf.getConf(SkewAggConf.LOCAL_AGGREGATE_MIN_MERGE_REDUCTION)
          val perKey = rows.toDouble / math.max(1L, keys)
          val counts = f"$rows%,d partial rows of about $keys%,d keys ($perKey%.2f per key)"
          val setting = s"${SkewAggConf.LOCAL_AGGREGATE_MIN_MERGE_REDUCTION.key}=$minReduction"
          // 1.0 always merges: the sketch's estimate may exceed the rows by its error.
          if (minReduction > 1.0 && perKey < minReduction) {
            RecordedDecisions.note(
              marker,
              AtRunTime(Step, s"not merged after the join's shuffle: $counts, below $setting"))
            merge.child
          } else {
            RecordedDecisions.note(
              marker,
              AtRunTime(Step, s"merged after the join's shuffle: $counts, at least $setting"))
            merge
          }
        }
    }
  }

  /**
   * The local stage's marker under the materialized shuffle stage `plan` reads, with the rows its
   * flushing aggregate emitted and the distinct keys its sketch estimates.
   */
  private def sketchedStageBelow(plan: SparkPlan): Option[(SkewAggLocalStageExec, Long, Long)] =
    plan match {
      case r: AQEShuffleReadExec => sketchedStageBelow(r.child)
      case s: ShuffleQueryStageExec if s.isMaterialized =>
        PartialAggregates.withoutCodegen(s.shuffle.child) match {
          case marker @ SkewAggLocalStageExec(f: FlushingPartialAggregateExec, _, _) =>
            f.emittedKeys.map(sketch => (marker, f.metrics("numOutputRows").value, sketch.value))
          case _ => None
        }
      case _ => None
    }
}

object DropUnneededMergeAfterShuffle {

  /** Marks the PartialMerge that [[PlanPartialAggregates]] puts after a join's shuffle. */
  val MergeAfterJoinShuffle: TreeNodeTag[Unit] = TreeNodeTag[Unit]("skewagg.mergeAfterJoinShuffle")

  /** The step its decision is about. */
  private val Step = "merge after the join's shuffle"
}
