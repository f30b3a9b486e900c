package org.apache.spark.sql.skewagg.localagg

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.optimizer.{BuildLeft, BuildRight, BuildSide}
import org.apache.spark.sql.catalyst.plans.{
  ExistenceJoin, InnerLike, JoinType, LeftAnti, LeftOuter, LeftSemi, RightOuter
}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.execution.{SortExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.{AQEShuffleReadExec, ShuffleQueryStageExec}
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.execution.exchange.EnsureRequirements
import org.apache.spark.sql.execution.joins.{BroadcastHashJoinExec, ShuffledJoin}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  PartialAggregates, SkewAggConf, RecordedDecisions, SkewAggLocalStageExec
}
import org.apache.spark.sql.skewagg.SkewAggDecision.AtRunTime
import org.apache.spark.util.Utils

/**
 * Adaptive query-stage preparation rule (runs each time AQE re-plans after a stage finished).
 *
 * Matches: a sort-merge or shuffled hash join planned by [[LocalAggregateBeforeJoin]] (tagged
 * [[BroadcastJoinBelowLocalAggregate.MayBroadcast]]: no join strategy hint), not split for skew,
 * whose inputs are materialized shuffle stages, one of them (on a side the join type can build)
 * at most `spark.sql.adaptive.autoBroadcastJoinThreshold` (else
 * `spark.sql.autoBroadcastJoinThreshold`) and not mostly empty partitions
 * (`spark.sql.adaptive.nonEmptyPartitionRatioForBroadcastJoin`). Spark's adaptive join
 * selection would broadcast that side; it cannot here, because it re-plans the rewritten
 * aggregate as one stage (its nodes link to the logical aggregate, see LocalAggregateBeforeJoin).
 *
 * Produces: a broadcast hash join building that side (the smaller when both fit), without the
 * sorts the sort-merge join needed, and the requirements ensured again (a broadcast exchange of
 * the built side; adaptive execution keeps the plan only if its cost model accepts it). The
 * decision, with the stage's size, is recorded on the local stage's marker.
 *
 * Refuses when skewagg or `spark.skewagg.join.localAggregate.enabled` is off, the threshold is
 * negative, or no side fits.
 */
case class BroadcastJoinBelowLocalAggregate(session: SparkSession) extends Rule[SparkPlan] {

  override def apply(plan: SparkPlan): SparkPlan = {
    if (!SkewAggConf.enabled(conf, SkewAggConf.JOIN_LOCAL_AGGREGATE_ENABLED)) return plan
    val threshold = conf
      .getConf(SQLConf.ADAPTIVE_AUTO_BROADCASTJOIN_THRESHOLD)
      .getOrElse(conf.autoBroadcastJoinThreshold)
    if (threshold < 0) return plan
    val rewritten = plan.transformUp {
      case j: ShuffledJoin
          if j.getTagValue(BroadcastJoinBelowLocalAggregate.MayBroadcast).isDefined &&
            !j.isSkewJoin =>
        broadcast(j, threshold).getOrElse(j)
    }
    if (rewritten.fastEquals(plan)) plan else EnsureRequirements().apply(rewritten)
  }

  private def broadcast(j: ShuffledJoin, threshold: Long): Option[SparkPlan] = {
    val candidates = Seq[(BuildSide, SparkPlan)](BuildLeft -> j.left, BuildRight -> j.right)
      .filter { case (side, _) => canBuild(side, j.joinType) }
      .flatMap { case (side, child) => stageBelow(child).map(stage => (side, stage)) }
      .filter { case (_, stage) => stage.isMaterialized && fits(stage, threshold) }
    if (candidates.isEmpty || !Seq(j.left, j.right).forall(stageBelow(_).exists(_.isMaterialized)))
      return None
    val (side, stage) = candidates.minBy { case (_, stage) => bytes(stage) }
    val joined = BroadcastHashJoinExec(
      j.leftKeys,
      j.rightKeys,
      j.joinType,
      side,
      j.condition,
      withoutSort(j.left),
      withoutSort(j.right))
    j.logicalLink.foreach(joined.setLogicalLink)
    val name = if (side == BuildLeft) "left" else "right"
    val setting = SQLConf.ADAPTIVE_AUTO_BROADCASTJOIN_THRESHOLD.key
    Seq(j.left, j.right).flatMap(stageBelow).flatMap(markerIn).foreach(
      RecordedDecisions.note(
        _,
        AtRunTime(
          "join",
          s"the join broadcast at run time: its $name side's stage holds " +
            s"${Utils.bytesToString(bytes(stage))}, at most $setting " +
            s"(${Utils.bytesToString(threshold)})")))
    Some(joined)
  }

  private def canBuild(side: BuildSide, joinType: JoinType): Boolean = (side, joinType) match {
    case (_, _: InnerLike) => true
    case (BuildLeft, RightOuter) => true
    case (BuildRight, LeftOuter | LeftSemi | LeftAnti | _: ExistenceJoin) => true
    case _ => false
  }

  private def bytes(stage: ShuffleQueryStageExec): BigInt =
    stage.mapStats.map(s => BigInt(s.bytesByPartitionId.sum)).getOrElse(BigInt(0))

  /** Within the threshold, and not mostly empty partitions (Spark's DynamicJoinSelection). */
  private def fits(stage: ShuffleQueryStageExec, threshold: Long): Boolean =
    stage.mapStats.exists { stats =>
      val partitions = stats.bytesByPartitionId.length
      val nonEmpty = stats.bytesByPartitionId.count(_ > 0)
      val mostlyEmpty = partitions > 0 && nonEmpty > 0 &&
        nonEmpty.toDouble / partitions < conf.nonEmptyPartitionRatioForBroadcastJoin
      bytes(stage) <= threshold && !mostlyEmpty
    }

  /** The shuffle stage a join input reads: through its sort, a read, the merge after it. */
  private def stageBelow(plan: SparkPlan): Option[ShuffleQueryStageExec] = plan match {
    case s: ShuffleQueryStageExec => Some(s)
    case s: SortExec if !s.global => stageBelow(s.child)
    case r: AQEShuffleReadExec => stageBelow(r.child)
    case a: BaseAggregateExec
        if a.getTagValue(DropUnneededMergeAfterShuffle.MergeAfterJoinShuffle).isDefined =>
      stageBelow(a.child)
    case _ => None
  }

  private def withoutSort(plan: SparkPlan): SparkPlan = plan match {
    case s: SortExec if !s.global => s.child
    case other => other
  }

  private def markerIn(stage: ShuffleQueryStageExec): Option[SkewAggLocalStageExec] =
    PartialAggregates.withoutCodegen(stage.shuffle.child) match {
      case marker: SkewAggLocalStageExec => Some(marker)
      case _ => None
    }
}

object BroadcastJoinBelowLocalAggregate {

  /** Marks the shuffled join [[LocalAggregateBeforeJoin]] planned, without a strategy hint. */
  val MayBroadcast: TreeNodeTag[Unit] = TreeNodeTag[Unit]("skewagg.mayBroadcastAtRunTime")
}
