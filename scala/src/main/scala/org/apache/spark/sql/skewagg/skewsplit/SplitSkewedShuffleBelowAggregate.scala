package org.apache.spark.sql.skewagg.skewsplit

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.aggregate.PartialMerge
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.execution.adaptive.{AQEShuffleReadExec, ShuffleQueryStageExec}
import org.apache.spark.sql.execution.exchange.{
  REPARTITION_BY_COL, REPARTITION_BY_NUM, ShuffleExchangeExec
}
import org.apache.spark.sql.skewagg.{
  FusedAggregates, SkewAggConf, RecordedDecisions, SkewAggHints, SkewAggLocalStageExec,
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
 * skewagg's thresholds: the task holding the hot key runs its partial and final aggregation. Also
 * the merge right above the user's shuffle of a DISTINCT's first step whose partials ran before it
 * (skewagg's flushing aggregate): it holds every value of a hot key.
 *
 * Produces: the skewed partitions read in map-output ranges by several tasks (as Spark's skew join
 * reads them), the partial aggregate on each, and an exchange of the partial results with the
 * user's own partitioning (same expressions, partition count and shuffle origin) before the final
 * aggregate, so the output is partitioned exactly as the user asked. Where the partials already
 * feed an exchange (multiple DISTINCTs expand before aggregating), only the read is split. Below a
 * DISTINCT's first step (grouping by the keys and the distinct values), the skew test counts rows
 * ([[GroupsBeyondShuffleKeys]]) and Spark places the exchanges: on all the step's grouping keys,
 * which spreads a hot key's values, and on the user's keys below the regrouping aggregate (for
 * that merge, a merge of each split's rows goes first), for the skewed partitions' pieces only:
 * the aggregates above run apart ([[SkewedPartitionsApart]]), in place over the tasks that read
 * whole partitions. Nothing changes when no partition is skewed, so uniform data runs Spark's
 * plan.
 *
 * Refuses when skewagg or `spark.skewagg.repartition.enabled` is off, the aggregate has the
 * NO_SKEW_AGG hint, the repartition hashes on anything but grouping attributes, no skewed
 * partition can be split (one map task wrote it all), or the split adds an exchange and Spark's
 * default adaptive cost model, which would reject it, is in use ([[AddedExchangeCost]]).
 */
case class SplitSkewedShuffleBelowAggregate(session: SparkSession) extends Rule[SparkPlan] {
  import org.apache.spark.sql.skewagg.PartialAggregates._
  import org.apache.spark.sql.skewagg.CheapExchanges.{cheapExchangePartitions, withCheapExchanges}

  override def apply(plan: SparkPlan): SparkPlan = {
    if (!SkewAggConf.enabled(conf)) return plan
    if (!conf.getConf(SkewAggConf.REPARTITION_ENABLED)) {
      return FusedAggregates.splitWhere(plan, isCandidate) { split =>
        split.foreach(p =>
          if (splits(p) && userStageBelow(p).exists(measured(p, _).skew.nonEmpty)) {
            RecordedDecisions.record(
              p,
              SwitchedOff(
                "no split read of the skewed repartition below",
                SkewAggConf.REPARTITION_ENABLED))
          })
        split
      }
    }
    FusedAggregates.splitWhere(plan, FusedAggregates.orRegrouping(splits)) { split =>
      // A DISTINCT's split needs two exchanges, each placed by Spark's EnsureRequirements.
      val rewritten = if (split.exists(p => splits(p) && spreadsValues(p))) {
        val apart = withCheapExchanges(split, minAdded = 0)(splitApartBelowDistinct)
        if (apart ne split) apart else withCheapExchanges(split, minAdded = 0)(splitReads)
      } else {
        splitReads(split)
      }
      keptByCostModel(split, rewritten)
    }
  }

  /**
   * `rewritten`, unless it adds exchanges that Spark's default cost model would reject (the
   * split reads alone, below exchanges the plan has, add none): then `split`, the refusal
   * recorded on its skewed aggregates.
   */
  private def keptByCostModel(split: SparkPlan, rewritten: SparkPlan): SparkPlan =
    if (AddedExchangeCost.keeps(conf, split, rewritten)) rewritten
    else {
      AddedExchangeCost.warnOnce("a skewed repartition below an aggregate")
      split.foreach(p =>
        if (splits(p) && userStageBelow(p).exists(measured(p, _).skew.nonEmpty)) {
          RecordedDecisions.record(
            p,
            AddedExchangeCost.refusal("the user's repartition below is skewed", Rewrite))
        })
      split
    }

  private def splitReads(plan: SparkPlan): SparkPlan = plan.transformDown {
    // The partials already feed an exchange (multiple DISTINCTs): only split the read.
    case e: ShuffleExchangeExec if isCandidate(e.child) =>
      val partial = e.child
      userStageBelow(partial).flatMap(splitRead(partial, _))
        .map(local => e.withNewChildren(Seq(local))).getOrElse(e)
    // A DISTINCT's first step: the merge of its (keys, value) groups above gets an exchange on
    // all of them, the regrouping aggregate one on the keys (EnsureRequirements places both).
    case partial if isCandidate(partial) && spreadsValues(partial) =>
      userStageBelow(partial).flatMap(splitRead(partial, _)).getOrElse(partial)
    // The merge of a DISTINCT's first step whose partials ran before the user's shuffle (the
    // flushing aggregate): a merge of each split's rows first, then the same two exchanges.
    case merge: BaseAggregateExec if isDistinctMerge(merge) =>
      userStageBelow(merge).flatMap { stage =>
        splitRead(merge, stage, Some(partialMerge(merge, None, merge.child)))
          .map(local => merge.withNewChildren(Seq(local)))
      }.getOrElse(merge)
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
  }

  /**
   * `plan` with the aggregates over each DISTINCT's first step (or the merge of its partials)
   * run apart on the split partitions' pieces and on the rest ([[SkewedPartitionsApart]]): the
   * exchange of that step's groups is paid for the skewed partitions' rows only. The whole
   * partitions' merge reads them directly, without the merge of each split's rows first.
   */
  private def splitApartBelowDistinct(plan: SparkPlan): SparkPlan =
    SkewedPartitionsApart.where(plan, p => splits(p) && spreadsValues(p)) { (top, step) =>
      val stage = userStageBelow(step).get
      val merge = isDistinctMerge(step)
      val reading = step match {
        case m: BaseAggregateExec if merge => Some(partialMerge(m, None, m.child))
        case _ => None
      }
      splitRead(step, stage, reading, onlyPieces = true) match {
        case None => top
        case Some(local) =>
          val read = local.collect { case r: AQEShuffleReadExec => r }.head
          val whole = step.transformUp { case s: ShuffleQueryStageExec if s eq stage => read }
          val pieces = if (merge) step.withNewChildren(Seq(local)) else local
          SkewedPartitionsApart(top, step, whole, pieces)
      }
    }

  /** An aggregate whose input this rule may read in splits. */
  private def splits(plan: SparkPlan): Boolean = isCandidate(plan) || isDistinctMerge(plan)

  private def isCandidate(plan: SparkPlan): Boolean = plan match {
    case partial
        if isBottomPartial(partial) && partial.children.size == 1 &&
          !SkewAggHints.forbidden(partial) => userStageBelow(partial).isDefined
    case _ => false
  }

  /**
   * A DISTINCT's first step grouping by more than the user's keys: the task holding a hot key
   * holds a group per distinct value of it.
   */
  private def spreadsValues(partial: SparkPlan): Boolean =
    GroupsBeyondShuffleKeys.isDistinctStep(partial) && userStageBelow(partial).exists { stage =>
      stage.shuffle.outputPartitioning match {
        case HashPartitioning(keys, _) => GroupsBeyondShuffleKeys.applies(partial, keys)
        case _ => false
      }
    }

  /**
   * The merge above the user's shuffle of the partials of a DISTINCT's first step (grouping by
   * more than the user's keys) that ran before it: it needs each (keys, value) group whole.
   */
  private def isDistinctMerge(plan: SparkPlan): Boolean = plan match {
    case merge: BaseAggregateExec =>
      merge.requiredChildDistributionExpressions.exists(_.nonEmpty) &&
      merge.aggregateExpressions.forall(_.mode == PartialMerge) &&
      !SkewAggHints.forbidden(merge) && spreadsValues(merge)
    case _ => false
  }

  /** The user's repartition below `partial`, measured for it ([[GroupsBeyondShuffleKeys]]). */
  private def measured(
      partial: SparkPlan,
      stage: ShuffleQueryStageExec): GroupsBeyondShuffleKeys.Measured =
    GroupsBeyondShuffleKeys.measure(stage, spreadsValues(partial), conf)

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

  /**
   * `reading` (by default `partial`) reading the stage's skewed partitions in splits, marked
   * (`onlyPieces`: for the pieces' branch of [[SkewedPartitionsApart]]); None if nothing splits.
   * The test is `partial`'s, and so are the records of a refusal.
   */
  private def splitRead(
      partial: SparkPlan,
      stage: ShuffleQueryStageExec,
      reading: Option[SparkPlan] = None,
      onlyPieces: Boolean = false): Option[SparkPlan] = {
    val stats = stage.mapStats.get
    val sizes = stats.bytesByPartitionId
    val measure = measured(partial, stage)
    val skew = measure.skew
    if (!skew.nonEmpty) {
      RecordedDecisions.record(partial, measure.notSkewed("the user's repartition below", conf))
      return None
    }
    val target = SkewedPartitions.pieceSize(sizes, skew, measure.byteMinSplit)
    val reads = SkewedPartitionReads.of(stats, skew.skewed.map(_._1).toSet, target)
    if (reads.added == 0) {
      RecordedDecisions.record(
        partial,
        Refused(
          "the repartition is skewed, but one map task wrote each skewed partition, so it " +
            "cannot be read in splits.",
          Rewrite))
      return None
    }
    val read = AQEShuffleReadExec(stage, reads.specs)
    val splitPartial = reading.getOrElse(partial).transformUp {
      case s: ShuffleQueryStageExec if s eq stage => read
    }
    val spread =
      if (skew.inRows) GroupsBeyondShuffleKeys.spreadNote(partial, onlyPieces) else ""
    Some(SkewAggLocalStageExec.mark(
      splitPartial,
      Rewritten(
        s"$Rewrite: " + SkewAggLocalStageExec.describe("partition", skew) + spread,
        Rewrite),
      skew.skewed.size))
  }
}

object SplitSkewedShuffleBelowAggregate {

  /** The rewrite's name in its records (`SkewAggDecision.Rewritten` and `Refused`). */
  val Rewrite = "skewed repartition read in splits"
}
