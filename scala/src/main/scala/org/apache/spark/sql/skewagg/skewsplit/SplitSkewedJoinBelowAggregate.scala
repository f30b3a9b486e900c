package org.apache.spark.sql.skewagg.skewsplit

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.{Cross, Inner, LeftAnti, LeftOuter, LeftSemi, RightOuter}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{SortExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.{OptimizeSkewedJoin, ShuffleQueryStageExec}
import org.apache.spark.sql.execution.exchange.{ENSURE_REQUIREMENTS, EnsureRequirements}
import org.apache.spark.sql.execution.joins.ShuffledJoin
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  FusedAggregates, SkewAggConf, SkewAggDecision, RecordedDecisions, SkewAggHints,
  SkewAggLocalStageExec, SkewedPartitions, TaskSlots
}
import org.apache.spark.sql.skewagg.SkewAggDecision.{NotSkewed, Refused, Rewritten, SwitchedOff}
import org.apache.spark.sql.skewagg.skewsplit.SplitSkewedJoinBelowAggregate.Rewrite

/**
 * Adaptive query-stage preparation rule (runs each time AQE re-plans after a stage finished).
 *
 * Matches: a partial aggregate over a sort-merge or shuffled-hash join (through Project, Filter
 * or Expand)
 * whose two shuffle stages have materialized, where a stage has skewed partitions by skewagg's
 * thresholds (`spark.skewagg.skew.*`; counted in rows where the aggregate groups by more than the
 * join keys, as a DISTINCT's first step does: [[GroupsBeyondShuffleKeys]]), and whose final
 * aggregate sits above in the same stage:
 * the join on the key left partial and final aggregation of a hot key in one task, and Spark's
 * skew join declines because splitting needs another shuffle under the aggregate.
 *
 * Produces: the join's skewed partitions split as Spark's skew join does (Spark's own
 * OptimizeSkewedJoin applied to the subtree, under skewagg's thresholds), the partial aggregate
 * running on each split, and an exchange on the grouping keys between partial and final
 * aggregate. That exchange moves one row per key and split, which
 * [[io.skewagg.SkewAggCostEvaluator]] knows to be cheap. The partial aggregate is marked with a
 * [[SkewAggLocalStageExec]] naming the skewed partition. Where it groups by more than the join
 * keys (a DISTINCT's first step), the aggregates above the split join run apart
 * ([[SkewedPartitionsApart]]): in place over the join's tasks that read whole partitions, with
 * the exchanges over the tasks that read the skewed partitions' pieces.
 *
 * Refuses when skewagg or `spark.skewagg.join.skewSplit.enabled` is off, the aggregate has the
 * NO_SKEW_AGG hint, no partition is skewed,
 * the join type cannot be split on its skewed side, any exchange it would add is not directly
 * above a partial aggregate, or Spark's default cost model is in use without
 * `forceOptimizeSkewedJoin` (it would reject the plan; a warning says which setting to use).
 */
case class SplitSkewedJoinBelowAggregate(session: SparkSession) extends Rule[SparkPlan] {
  import org.apache.spark.sql.skewagg.PartialAggregates._
  import org.apache.spark.sql.skewagg.CheapExchanges.{withCheapExchanges}

  override def apply(plan: SparkPlan): SparkPlan = {
    if (!SkewAggConf.enabled(conf)) return plan
    plan.foreach(p => notSkewedJoinBelow(p).foreach(RecordedDecisions.record(p, _)))
    if (!conf.getConf(SkewAggConf.JOIN_SKEW_SPLIT_ENABLED)) {
      return FusedAggregates.splitWhere(plan, isCandidate) { split =>
        split.foreach(p =>
          if (isCandidate(p)) {
            RecordedDecisions.record(p, SplitSkewedJoinBelowAggregate.switchedOff)
          })
        split
      }
    }
    FusedAggregates.splitWhere(plan, FusedAggregates.orRegrouping(isCandidate))(splitJoins)
  }

  private def splitJoins(plan: SparkPlan): SparkPlan = {
    if (!plan.exists(isCandidate)) return plan
    if (!costModelAccepts) {
      AddedExchangeCost.warnOnce("a skewed join below an aggregate")
      plan.foreach(p =>
        if (isCandidate(p))
          RecordedDecisions.record(p, SplitSkewedJoinBelowAggregate.costModelRefusal))
      return plan
    }
    val apart = withCheapExchanges(plan, minAdded = 0)(splitApartBelowDistinct)
    if (apart ne plan) return apart
    val rewritten = withCheapExchanges(plan, minAdded = 0)(_.transformDown {
      case partial if isCandidate(partial) =>
        val split = splitJoinBelow(partial)
        if (split.fastEquals(partial)) {
          RecordedDecisions.record(partial, unsplitReason(partial))
        } else {
          val skew = largestSkew(partial)
          val spread = if (skew.inRows) GroupsBeyondShuffleKeys.spreadNote(partial) else ""
          SkewAggLocalStageExec.mark(split, splitRecord(skew, spread), skew.skewed.size)
        }
    })
    // Rolled back: the records went with the rewritten plan.
    if (rewritten eq plan) {
      plan.foreach(p =>
        if (isCandidate(p) && RecordedDecisions.of(p).isEmpty) {
          RecordedDecisions.record(p, SplitSkewedJoinBelowAggregate.notCheapRefusal)
        })
    }
    rewritten
  }

  /**
   * `plan` with the aggregates over each candidate whose first step groups by more than the join
   * keys (a DISTINCT's) run apart on the split partitions' pieces and on the rest
   * ([[SkewedPartitionsApart]]): the exchange of that step's groups is paid for the skewed
   * partitions' rows only.
   */
  private def splitApartBelowDistinct(plan: SparkPlan): SparkPlan =
    SkewedPartitionsApart.where(plan, p => isCandidate(p) && groupsBeyondJoinKeys(p)) {
      (top, partial) =>
        val split = splitJoinBelow(partial)
        if (split.fastEquals(partial)) top
        else {
          val skew = largestSkew(partial)
          val spread = GroupsBeyondShuffleKeys.spreadNote(partial, onlyPieces = true)
          val marked =
            SkewAggLocalStageExec.mark(split, splitRecord(skew, spread), skew.skewed.size)
          SkewedPartitionsApart(top, partial, whole = split, pieces = marked)
        }
    }

  private def groupsBeyondJoinKeys(partial: SparkPlan): Boolean =
    joinBelow(partial.children.head).exists(j =>
      GroupsBeyondShuffleKeys.applies(partial, j.leftKeys ++ j.rightKeys))

  /** The measure of the join side below `partial` with the largest skewed partition. */
  private def largestSkew(partial: SparkPlan): SkewedPartitions =
    measuredSides(partial).map(_.skew).filter(_.nonEmpty).maxBy(_.skewed.map(_._2).max)

  private def splitRecord(skew: SkewedPartitions, spread: String): Rewritten = Rewritten(
    s"$Rewrite: " + SkewAggLocalStageExec.describe("partition", skew) + spread,
    Rewrite)

  /**
   * Why Spark's split left the skewed join under `partial` whole: every skewed side is one the
   * join type does not let Spark split (Spark splits the left side of inner, cross, left outer,
   * semi and anti joins, the right side of inner, cross and right outer joins), or a skewed
   * partition's map outputs do not fill two pieces of the split size (Spark's: the larger of
   * `spark.skewagg.skew.minSplitSize` and the side's average partition that is not skewed).
   */
  private def unsplitReason(partial: SparkPlan): SkewAggDecision = {
    val join = joinBelow(partial.children.head).get
    val canSplit = Seq(
      Seq(Inner, Cross, LeftOuter, LeftSemi, LeftAnti).contains(join.joinType),
      Seq(Inner, Cross, RightOuter).contains(join.joinType))
    val skewed = Seq("left", "right").zip(join.children).zip(canSplit).flatMap {
      case ((side, child), splittable) =>
        measuredSide(partial, join, child).filter(_.skew.nonEmpty)
          .map(m => ((side, m), splittable))
    }
    skewed.collectFirst { case (found, true) => found } match {
      case None =>
        SplitSkewedJoinBelowAggregate.unsplittableSide(
          skewed.map(_._1._1).mkString(" and "),
          join.joinType.sql)
      case Some((side, m)) =>
        SplitSkewedJoinBelowAggregate.onePiece(
          s"its $side side's ${SkewAggLocalStageExec.describe("partition", m.skew)}",
          math.max(
            advisorySize(measuredSides(partial)),
            SkewedPartitions.splitSize(m.bytes, m.skew, m.byteMinSplit)))
    }
  }

  /** A partial aggregate reading a not-yet-split shuffled join whose inputs show skew. */
  private def isCandidate(plan: SparkPlan): Boolean = plan match {
    case agg if isBottomPartial(agg) && agg.children.size == 1 && !SkewAggHints.forbidden(agg) =>
      joinBelow(agg.children.head).exists { j =>
        // Both inputs finished: Spark's split then changes this join only. With an input still
        // to run, it would split a join further down instead (below a user repartition, say),
        // which vanilla Spark leaves alone (docs/testing.md, fuzz seed 5 case 4410).
        j.children.forall(isFinishedStage) &&
        j.children.exists(measuredSide(agg, j, _).exists(_.skew.nonEmpty))
      }
    case _ => false
  }

  private def isFinishedStage(plan: SparkPlan): Boolean = plan match {
    case s: SortExec => isFinishedStage(s.child)
    case s: ShuffleQueryStageExec => s.isMaterialized && s.mapStats.isDefined
    case _ => false
  }

  /** A finished join input stage that Spark's skew split can split. */
  private def joinInputStage(plan: SparkPlan): Option[ShuffleQueryStageExec] = plan match {
    case s: SortExec => joinInputStage(s.child)
    case s: ShuffleQueryStageExec
        if s.isMaterialized && s.mapStats.isDefined &&
          s.shuffle.shuffleOrigin == ENSURE_REQUIREMENTS => Some(s)
    case _ => None
  }

  /**
   * The join input `side` of `join` measured for the aggregate `partial` above
   * ([[GroupsBeyondShuffleKeys]]: in rows where it groups by more than the join keys).
   */
  private def measuredSide(
      partial: SparkPlan,
      join: ShuffledJoin,
      side: SparkPlan): Option[GroupsBeyondShuffleKeys.Measured] =
    joinInputStage(side).map(GroupsBeyondShuffleKeys.measure(
      _,
      GroupsBeyondShuffleKeys.applies(partial, join.leftKeys ++ join.rightKeys),
      conf))

  /** Both input sides of the join below `partial`, measured for it. */
  private def measuredSides(partial: SparkPlan): Seq[GroupsBeyondShuffleKeys.Measured] =
    joinBelow(partial.children.head).toSeq.flatMap(j =>
      j.children.flatMap(measuredSide(partial, j, _)))

  /**
   * What the rule saw where it looked and found nothing to split: a bottom partial aggregate
   * (or one fused with its final half) reading a shuffled join whose inputs finished without a
   * skewed partition.
   */
  private def notSkewedJoinBelow(plan: SparkPlan): Option[SkewAggDecision] = plan match {
    case agg
        if (isBottomPartial(agg) || FusedAggregates.isFused(agg)) && agg.children.size == 1 &&
          !SkewAggHints.forbidden(agg) =>
      joinBelow(agg.children.head).map(j => j.children.map(measuredSide(agg, j, _))).collect {
        case inputs if inputs.forall(_.exists(_.skew.skewed.isEmpty)) =>
          inputs.flatten.maxBy(m => if (m.bytes.isEmpty) 0L else m.bytes.max)
            .notSkewed("the join's input shuffles below", conf)
      }
    case _ => None
  }

  private def joinBelow(plan: SparkPlan): Option[ShuffledJoin] = belowRowLocal(plan) match {
    case j: ShuffledJoin if !j.isSkewJoin => Some(j)
    case _ => None
  }

  /**
   * The advisory size Spark's split is given: it cuts pieces of max(this, the side's average
   * non-skewed partition). skewagg's smallest piece, in the shuffle's bytes (in memory where the
   * side is measured in rows), and at least the side's SkewedPartitions.smallestPiece (as
   * pieceSize): each piece reads the other side's partition again, so where every partition is
   * skewed, pieces of the smallest size would read it hundreds of times.
   * The least of the skewed sides' (a side with no skew is not split, whatever its share).
   */
  private def advisorySize(sides: Seq[GroupsBeyondShuffleKeys.Measured]): Long = {
    val skewed = sides.filter(_.skew.nonEmpty)
    if (skewed.isEmpty) conf.getConf(SkewAggConf.SKEW_MIN_SPLIT_SIZE)
    else {
      skewed.map(m =>
        math.max(m.byteMinSplit, SkewedPartitions.smallestPiece(m.bytes.sum, m.skew.slots))).min
    }
  }

  /** Spark's skew-join split of the join under `partial`, with skewagg's thresholds. */
  private def splitJoinBelow(partial: SparkPlan): SparkPlan = {
    val thresholds = conf.clone()
    thresholds.setConf(SQLConf.SKEW_JOIN_ENABLED, true)
    // Spark's threshold is max(this, factor x median) per side, in the shuffle's bytes: a factor
    // of 0 leaves this alone, which carries skewagg's test (SkewedPartitions: the floor in those
    // bytes, the factor times the per-slot share) for the side with the smaller share, so that a
    // side the candidate test found skewed is split.
    thresholds.setConf(SQLConf.SKEW_JOIN_SKEWED_PARTITION_FACTOR, 0.0)
    val sides = measuredSides(partial)
    val shares = sides.map(m => m.bytes.sum / math.max(m.skew.slots, 1))
    thresholds.setConf(
      SQLConf.SKEW_JOIN_SKEWED_PARTITION_THRESHOLD,
      SkewedPartitions.threshold(
        if (shares.isEmpty) 0L else shares.min,
        conf,
        if (sides.isEmpty) conf.getConf(SkewAggConf.SKEW_MIN_PARTITION_SIZE)
        else sides.map(_.byteFloor).min))
    thresholds.setConf(SQLConf.ADVISORY_PARTITION_SIZE_IN_BYTES, advisorySize(sides))
    // The subtree under a partial aggregate has no distribution requirement, so Spark's rule
    // accepts the split without forcing; the exchange above the partial is added by the caller.
    SQLConf.withExistingConf(thresholds) {
      OptimizeSkewedJoin(EnsureRequirements()).apply(partial)
    }
  }

  private def costModelAccepts: Boolean =
    AddedExchangeCost.accepted(conf) || conf.getConf(SQLConf.ADAPTIVE_FORCE_OPTIMIZE_SKEWED_JOIN)
}

object SplitSkewedJoinBelowAggregate {

  /** The rewrite's name in its records (`SkewAggDecision.Rewritten` and `Refused`). */
  val Rewrite = "skew split of the join below the aggregate"

  val costModelRefusal: SkewAggDecision =
    AddedExchangeCost.refusal("the join below is skewed", Rewrite)

  val notCheapRefusal: SkewAggDecision = Refused(
    "the join below is skewed, but the split would need an exchange of more than partial " +
      "results above it.",
    Rewrite)

  /** The skewed `sides` of a `joinType` join are sides Spark does not split. */
  def unsplittableSide(sides: String, joinType: String): SkewAggDecision = Refused(
    s"the join below is skewed on its $sides side, which Spark does not split in a $joinType " +
      "join (it splits the left side of inner, left outer, semi and anti joins, the right side " +
      "of inner and right outer joins).",
    Rewrite)

  /** `skewed` (what is skewed) fills less than two pieces of the split size `pieceBytes`. */
  def onePiece(skewed: String, pieceBytes: Long): SkewAggDecision = Refused(
    s"the join below is skewed ($skewed), but its map outputs do not fill two pieces of " +
      s"${SkewAggLocalStageExec.bytes(pieceBytes)}, the split size (the larger of " +
      s"${SkewAggConf.SKEW_MIN_SPLIT_SIZE.key} and the side's average partition), so Spark's " +
      s"split reads it whole. Lower ${SkewAggConf.SKEW_MIN_SPLIT_SIZE.key} to split it.",
    Rewrite)
  val switchedOff: SkewAggDecision =
    SwitchedOff("no skew split of the join below", SkewAggConf.JOIN_SKEW_SPLIT_ENABLED)
}
