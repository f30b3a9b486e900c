package org.apache.spark.sql.skewagg.skewsplit

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.aggregate.{Collect, CollectSet, CollectTopK, Final}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.{AQEShuffleReadExec, ShuffleQueryStageExec}
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.execution.exchange.ENSURE_REQUIREMENTS
import org.apache.spark.sql.skewagg.{
  CheapExchanges, MapOutputSizes, PartialAggregates, PartialStateMerge, RecordedDecisions,
  SkewAggConf, SkewAggHints, SkewAggLocalStageExec, SkewedPartitions
}
import org.apache.spark.sql.skewagg.SkewAggDecision.{Refused, Rewritten, SwitchedOff}
import org.apache.spark.sql.skewagg.skewsplit.SplitMergeOfPartialStates.{MinStates, Rewrite}

/**
 * Adaptive query-stage preparation rule.
 *
 * Matches: Spark's own two-phase aggregate, its final half (every aggregate expression Final, no
 * DISTINCT, grouping keys) reading the finished exchange of its partial half's states that
 * Spark placed (hashed on the grouping keys), where the states are heavy and a partition of them
 * is above the per-slot share ([[PartialStateMerge]]): with few keys, each key's final merge
 * reads one state per map task in one task, whatever the cluster's size.
 *
 * Produces: a merge in two levels for the skewed partitions. They are read in map-output ranges
 * (about sqrt(n) of a partition's n map outputs, at least the per-slot share) by several tasks
 * (as Spark's skew join reads a partition), each piece's states merged in its own task
 * (PartialMerge), the merged states exchanged on the grouping keys (a cheap exchange, coalesced
 * by [[CoalescePartialResultExchanges]]), and the final aggregate over them reads one state per
 * piece and key. The other partitions are read whole by the final aggregate as before
 * ([[SkewedPartitionsApart]]). The final aggregate merges the states in another order than
 * Spark's shuffle delivers them: an order-dependent state (`percentile_approx`'s sketch,
 * a union of HLL sketches) gives a result Spark could return (docs/rewrites.md).
 *
 * Refuses when skewagg or `spark.skewagg.partialStates.split.enabled` is off, the aggregate has
 * the NO_SKEW_AGG hint, the states are lighter than
 * `spark.skewagg.partialStates.split.minStateSize` (a cheap merge: Spark's plan), no partition is
 * above the per-slot share, a function whose merge concatenates its states (`collect_list`:
 * the final merge reads every value however merged before), fewer than
 * [[SplitMergeOfPartialStates.MinStates]] map tasks wrote to each skewed partition (two levels
 * would not pay), no skewed partition holds two pieces (`spark.skewagg.skew.minSplitSize`), the
 * plan above needs the aggregate's output partitioned as Spark's exchange left it (a join in the
 * same stage), or Spark's default adaptive cost model, which would reject the exchange the merge
 * adds, is in use ([[AddedExchangeCost]]).
 */
case class SplitMergeOfPartialStates(session: SparkSession) extends Rule[SparkPlan] {

  override def apply(plan: SparkPlan): SparkPlan = {
    if (!SkewAggConf.enabled(conf)) return plan
    val hot = plan.collect {
      case fin: BaseAggregateExec => statesBelow(fin).filter(_.isHot(conf)).map(fin -> _)
    }.flatten
    if (!conf.getConf(SkewAggConf.PARTIAL_STATES_SPLIT_ENABLED)) {
      hot.foreach { case (fin, _) =>
        RecordedDecisions.record(
          fin,
          SwitchedOff(
            "no merge in two levels of the heavy partial states",
            SkewAggConf.PARTIAL_STATES_SPLIT_ENABLED))
      }
      return plan
    }
    if (hot.nonEmpty && !AddedExchangeCost.accepted(conf)) {
      AddedExchangeCost.warnOnce("heavy partial states of few keys")
      hot.foreach { case (fin, merge) =>
        RecordedDecisions.record(
          fin,
          AddedExchangeCost.refusal(
            s"the final merge reads heavy partial states (${merge.describe})",
            Rewrite))
      }
      return plan
    }
    hot.foldLeft(plan) { case (current, (fin, merge)) => mergedInTwoLevels(current, fin, merge) }
  }

  /** `plan` with `fin`'s heavy states merged in two levels, or as it was (the reason recorded). */
  private def mergedInTwoLevels(
      plan: SparkPlan,
      fin: BaseAggregateExec,
      merge: PartialStateMerge): SparkPlan = concatenated(fin) match {
    case Some(function) =>
      RecordedDecisions.record(
        fin,
        Refused(
          s"the final merge reads heavy partial states (${merge.describe}), but $function's " +
            "merge keeps every value its states hold: merged in pieces first, the final " +
            "merge still reads them all, and the pieces' stage is added work.",
          Rewrite))
      plan
    case None => pieces(fin, merge).fold(plan) { piecesOfFin =>
        val rewritten = CheapExchanges.withCheapExchanges(plan, minAdded = 1)(
          _.transformDown { case p if p eq fin => apart(fin, piecesOfFin) })
        if (rewritten eq plan) {
          RecordedDecisions.record(
            fin,
            Refused(
              "the plan above the aggregate needs its output partitioned as Spark's exchange " +
                "of the partial states left it (an operator in the same stage), which a merge in " +
                "two levels does not keep.",
              Rewrite))
        }
        rewritten
      }
  }

  /**
   * The merge of the states of Spark's own exchange of `fin`'s partial results, if `fin` is the
   * final half of a two-phase aggregate this rule may split and that exchange ran.
   */
  private def statesBelow(fin: BaseAggregateExec): Option[PartialStateMerge] = fin.child match {
    case s: ShuffleQueryStageExec
        if isSparksFinal(fin) && s.shuffle.shuffleOrigin == ENSURE_REQUIREMENTS &&
          !CheapExchanges.isAddedBySkewagg(s.shuffle) &&
          PartialAggregates.isPartial(PartialAggregates.unwrap(s.shuffle.child)) &&
          hashesOnGroupingKeys(fin, s) => PartialStateMerge.of(s, conf)
    case _ => None
  }

  /**
   * The first function of `fin` whose merged state is the concatenation of its inputs'
   * (`collect_list`, `listagg`): its final merge does the same work however the states were
   * merged before it. A set, a top-K or a sketch merges into a bounded state.
   */
  private def concatenated(fin: BaseAggregateExec): Option[String] =
    fin.aggregateExpressions.map(_.aggregateFunction).collectFirst {
      case c: Collect[_] if !c.isInstanceOf[CollectSet] && !c.isInstanceOf[CollectTopK] =>
        c.prettyName
    }

  private def isSparksFinal(fin: BaseAggregateExec): Boolean =
    fin.groupingExpressions.nonEmpty && fin.aggregateExpressions.nonEmpty &&
      fin.aggregateExpressions.forall(e => e.mode == Final && !e.isDistinct) &&
      !SkewAggHints.forbidden(fin)

  private def hashesOnGroupingKeys(fin: BaseAggregateExec, s: ShuffleQueryStageExec): Boolean =
    s.shuffle.outputPartitioning match {
      case HashPartitioning(expressions, _) =>
        val keys = fin.groupingExpressions.map(_.toAttribute)
        expressions.length == keys.length &&
        expressions.forall(e => keys.exists(_.semanticEquals(e)))
      case _ => false
    }

  /**
   * The read of the stage with its skewed partitions in pieces of about sqrt(n) of their n
   * states (at least the per-slot share), each piece's states merged, marked with the rewrite's
   * numbers; None (recorded) where fewer than [[MinStates]] map tasks wrote to every skewed
   * partition, or no skewed partition holds two pieces.
   */
  private def pieces(fin: BaseAggregateExec, merge: PartialStateMerge): Option[SparkPlan] = {
    val stage = merge.stage
    val stats = stage.mapStats.get
    val sizes = stats.bytesByPartitionId
    val skewedIds = merge.skew.skewed.map(_._1).toSet
    // The states each skewed partition's merge reads: one per map task that wrote to it.
    val states = skewedIds.toSeq.map(i => i -> MapOutputSizes.of(stats.shuffleId, i).count(_ > 0))
    val most = states.map(_._2).max
    if (most < MinStates) {
      RecordedDecisions.record(
        fin,
        Refused(
          s"the final merge reads heavy partial states (${merge.describe}), but at most $most " +
            s"map tasks wrote to a skewed partition: a merge in two levels pays from $MinStates.",
          Rewrite))
      return None
    }
    // About sqrt(n) pieces of sqrt(n) of a partition's n states: both levels then merge as few
    // in a row as can be; never smaller than the per-slot share (the pieces fill the slots).
    val target = states.map { case (i, n) =>
      Seq(
        SkewedPartitions.splitSize(sizes, merge.skew, conf),
        merge.skew.slotShare,
        (sizes(i) / math.ceil(math.sqrt(n.toDouble))).toLong).max
    }.max
    val reads = SkewedPartitionReads.of(stats, skewedIds, target)
    if (reads.pieces == 0) {
      // No skewed partition holds two pieces (or the tracker lost their map outputs' sizes).
      RecordedDecisions.record(
        fin,
        Refused(
          s"the final merge reads heavy partial states (${merge.describe}), but no skewed " +
            s"partition holds more than one piece of ${merge.skew.format(target)} (at least " +
            s"${SkewAggConf.SKEW_MIN_SPLIT_SIZE.key}, the per-slot share and sqrt(n) of a " +
            "partition's n states): each is read whole, as Spark reads it.",
          Rewrite))
      return None
    }
    val read = AQEShuffleReadExec(stage, reads.specs)
    val split = merge.skew.skewed.size
    val rewritten = Rewritten(
      s"$Rewrite: the final merge reads one partial state per map task and key, " +
        s"${merge.describe}; the skewed partitions read in ${reads.pieces} pieces of about " +
        s"${merge.skew.format(target)} ($split partition(s)), each merging its states in its own " +
        "task, then one state per piece and key merged once more.",
      Rewrite)
    Some(SkewAggLocalStageExec.mark(
      PartialAggregates.partialMerge(fin, None, read),
      rewritten,
      split))
  }

  /**
   * `fin` over the whole partitions of the read in `piecesOfFin`, beside `fin` over its pieces'
   * merged states (the exchange between them placed by `withCheapExchanges`).
   */
  private def apart(fin: BaseAggregateExec, piecesOfFin: SparkPlan): SparkPlan = {
    val read = piecesOfFin.collectFirst { case r: AQEShuffleReadExec => r }.get
    SkewedPartitionsApart(
      fin,
      fin,
      fin.withNewChildren(Seq(read)),
      fin.withNewChildren(Seq(piecesOfFin)))
  }
}

object SplitMergeOfPartialStates {

  /**
   * The fewest states in a partition (map tasks that wrote to it) from which merging them in
   * about sqrt(n) pieces of sqrt(n) states, 2 sqrt(n) merges in a row, takes at most half of the
   * n merges in a row of Spark's final merge.
   */
  val MinStates = 16

  /** The rewrite's name in its records (`SkewAggDecision.Rewritten` and `Refused`). */
  val Rewrite = "heavy partial states merged in two levels"
}
