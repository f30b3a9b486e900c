package org.apache.spark.sql.skewagg.skewsplit

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.execution.{CoalescedPartitionSpec, ShufflePartitionSpec, SparkPlan}
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.execution.adaptive.{
  AQEShuffleReadExec, ShufflePartitionsUtil, ShuffleQueryStageExec
}
import org.apache.spark.sql.execution.exchange.{
  REPARTITION_BY_COL, REPARTITION_BY_NUM, ShuffleExchangeExec
}
import org.apache.spark.sql.skewagg.{
  FusedAggregates, SkewAggConf, SkewAggDecisions, SkewAggHints, SkewAggLocalStageExec,
  SkewedPartitions
}
import org.apache.spark.sql.skewagg.SkewAggDecision.{NotSkewed, Refused, Rewritten, SwitchedOff}
import org.apache.spark.sql.skewagg.skewsplit.SplitSkewedShuffleBelowAggregate.Rewrite

/**
 * Adaptive query-stage preparation rule.
 *
 * Matches: a bottom partial aggregate (one reading input rows, see
 * `PartialAggregates.isBottomPartial`) reading (through Project, Filter or Expand) a materialized
 * user repartition (`repartition(k)`, `repartition(n, k)`, `DISTRIBUTE BY k`) hashed on grouping
 * keys, with the final aggregate in the same stage, where the shuffle has skewed partitions by
 * skewagg's thresholds: the task holding the hot key runs its partial and final aggregation.
 *
 * Produces: the skewed partitions read in map-output ranges by several tasks (as Spark's skew join
 * reads them), the partial aggregate on each, and an exchange of the partial results with the
 * user's own partitioning (same expressions, partition count and shuffle origin) before the final
 * aggregate, so the output is partitioned exactly as the user asked. Where the partials already
 * feed an exchange (multiple DISTINCTs expand before aggregating), only the read is split. Nothing
 * changes when no partition is skewed, so uniform data runs Spark's plan.
 *
 * Refuses when skewagg or `spark.skewagg.repartition.enabled` is off, the aggregate has the
 * NO_SKEW_AGG hint, the repartition hashes on anything but grouping attributes, or no skewed
 * partition can be split (one map task wrote it all).
 */
case class SplitSkewedShuffleBelowAggregate(session: SparkSession) extends Rule[SparkPlan] {
  import org.apache.spark.sql.skewagg.PartialAggregates._
  import org.apache.spark.sql.skewagg.CheapExchanges.{cheapExchangePartitions}

  override def apply(plan: SparkPlan): SparkPlan = {
    if (!SkewAggConf.enabled(conf)) return plan
    if (!conf.getConf(SkewAggConf.REPARTITION_ENABLED)) {
      return FusedAggregates.splitWhere(plan, isCandidate) { split =>
        split.foreach(p =>
          if (isCandidate(p) && userStageBelow(p).exists(skewed)) {
            SkewAggDecisions.record(
              p,
              SwitchedOff(
                "no split read of the skewed repartition below",
                SkewAggConf.REPARTITION_ENABLED))
          })
        split
      }
    }
    FusedAggregates.splitWhere(plan, isCandidate)(_.transformDown {
      // The partials already feed an exchange (multiple DISTINCTs): only split the read.
      case e: ShuffleExchangeExec if isCandidate(e.child) =>
        val partial = e.child
        userStageBelow(partial).flatMap(splitRead(partial, _))
          .map(local => e.withNewChildren(Seq(local))).getOrElse(e)
      case partial if isCandidate(partial) =>
        userStageBelow(partial).flatMap { stage =>
          splitRead(partial, stage).map { local =>
            // The user's partitioning and origin: output partitioned as asked. A partition count
            // the user gave (repartition(n, k)) is kept; the default one is raised above the
            // bypass-merge threshold like every cheap exchange (PartialAggregates).
            val partitioning = stage.shuffle.outputPartitioning match {
              case h: HashPartitioning if stage.shuffle.shuffleOrigin == REPARTITION_BY_COL =>
                h.copy(numPartitions = cheapExchangePartitions(h.numPartitions))
              case other => other
            }
            ShuffleExchangeExec(
              partitioning,
              local,
              stage.shuffle.shuffleOrigin,
              stage.shuffle.advisoryPartitionSize)
          }
        }.getOrElse(partial)
    })
  }

  private def isCandidate(plan: SparkPlan): Boolean = plan match {
    case partial
        if isBottomPartial(partial) && partial.children.size == 1 &&
          !SkewAggHints.forbidden(partial) => userStageBelow(partial).isDefined
    case _ => false
  }

  private def skewed(stage: ShuffleQueryStageExec): Boolean =
    SkewedPartitions.find(stage.mapStats.get.bytesByPartitionId, conf).nonEmpty

  private def userStageBelow(partial: SparkPlan): Option[ShuffleQueryStageExec] =
    belowRowLocal(partial.children.head) match {
      case s: ShuffleQueryStageExec
          if s.isMaterialized && s.mapStats.isDefined &&
            (s.shuffle.shuffleOrigin == REPARTITION_BY_COL ||
              s.shuffle.shuffleOrigin == REPARTITION_BY_NUM) &&
            keysAreGroupingAttributes(partial, s) => Some(s)
      case _ => None
    }

  private def keysAreGroupingAttributes(partial: SparkPlan, s: ShuffleQueryStageExec): Boolean =
    (unwrap(partial), s.shuffle.outputPartitioning) match {
      case (agg: BaseAggregateExec, HashPartitioning(expressions, _)) =>
        expressions.flatMap(_.references).forall(a =>
          agg.groupingExpressions.exists(_.exprId == a.exprId))
      case _ => false
    }

  /** `partial` reading the stage's skewed partitions in splits, marked; None if nothing splits. */
  private def splitRead(partial: SparkPlan, stage: ShuffleQueryStageExec): Option[SparkPlan] = {
    val stats = stage.mapStats.get
    val sizes = stats.bytesByPartitionId
    val skew = SkewedPartitions.find(sizes, conf)
    if (!skew.nonEmpty) {
      SkewAggDecisions.record(
        partial,
        NotSkewed.ofShuffle("the user's repartition below", sizes, conf))
      return None
    }
    val skewedIds = skew.skewed.map(_._1).toSet
    val target = SkewedPartitions.splitSize(sizes, skew, conf)
    var splits = 0
    val specs: Seq[ShufflePartitionSpec] = sizes.indices.flatMap { i =>
      val whole = Seq(CoalescedPartitionSpec(i, i + 1, sizes(i)))
      if (!skewedIds(i)) whole
      else ShufflePartitionsUtil.createSkewPartitionSpecs(stats.shuffleId, i, target) match {
        case Some(pieces) => splits += pieces.size - 1; pieces
        case None => whole
      }
    }
    if (splits == 0) {
      SkewAggDecisions.record(
        partial,
        Refused(
          "the repartition is skewed, but one map task wrote each skewed partition, so it " +
            "cannot be read in splits.",
          Rewrite))
      return None
    }
    val read = AQEShuffleReadExec(stage, specs)
    val splitPartial = partial.transformUp { case s: ShuffleQueryStageExec if s eq stage => read }
    Some(SkewAggLocalStageExec.mark(
      splitPartial,
      Rewritten(s"$Rewrite: " + SkewAggLocalStageExec.describe("partition", skew), Rewrite),
      skew.skewed.size))
  }
}

object SplitSkewedShuffleBelowAggregate {

  /** The rewrite's name in its records (`SkewAggDecision.Rewritten` and `Refused`). */
  val Rewrite = "skewed repartition read in splits"
}
