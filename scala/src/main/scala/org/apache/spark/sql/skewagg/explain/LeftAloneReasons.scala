package org.apache.spark.sql.skewagg.explain

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.ShuffleQueryStageExec
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.execution.exchange.ShuffleExchangeLike
import org.apache.spark.sql.execution.joins.ShuffledJoin
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  FusedAggregates, PartialAggregates, PartialStateMerge, PlanNodes, SkewAggAggregateExec,
  SkewAggConf, SkewAggDecision, RecordedDecisions, SkewAggHints, SkewAggLocalStageExec,
  SkewedPartitions
}
import org.apache.spark.sql.skewagg.SkewAggDecision.{NotSkewed, Pending, Refused, SkewedNoMatch}
import org.apache.spark.sql.skewagg.SkewAggDecision.Refused.EveryRewrite

/**
 * Physical rule, after skewagg's other rules: adaptive query-stage preparation (`adaptive`), and
 * before columnar transitions ([[PlanningFallback.beforeColumnarTransitions]]; under adaptive
 * execution it sees each new stage and the final plan, their inputs finished).
 *
 * Matches: every final aggregate (and Python UDAF aggregate) that was not rewritten.
 * Produces: the plan unchanged; records on the aggregate why skewagg left it alone, with the
 * rules' own tests ([[LeftAloneReasons.reason]]): skewagg off, the NO_SKEW_AGG hint, a Python
 * UDAF, one phase, the sizes of the finished shuffle below (not skewed, or skewed in a shape no
 * rewrite matches), a shuffle sized only at run time without adaptive execution, bucket files,
 * or Spark's own per-task partial aggregation.
 * Under adaptive execution, while the shuffle below has not run, it records that the decision
 * is still to come ([[SkewAggDecision.Pending]]); the decision made once it ran replaces that.
 */
case class LeftAloneReasons(session: SparkSession, adaptive: Boolean = true)
    extends Rule[SparkPlan] {

  override def apply(plan: SparkPlan): SparkPlan = {
    // The plan's own nodes: an adaptive plan below is recorded on by its own stages' rules.
    plan.foreach {
      case agg if LeftAloneReasons.isFinalAggregate(agg) =>
        // (None: rewritten, or a rule's record says why; a copied pending record is settled.)
        LeftAloneReasons.reason(agg, conf, adaptive)
          .fold(RecordedDecisions.settle(agg))(RecordedDecisions.note(agg, _))
      case _ =>
    }
    plan
  }
}

object LeftAloneReasons {

  /**
   * A final aggregate a query shows (a final or fused half, skewagg's own, a Python UDAF): what
   * the explanation lists.
   */
  def isFinalAggregate(plan: SparkPlan): Boolean = plan match {
    case a: BaseAggregateExec => !PartialAggregates.isPartial(a)
    case _: SkewAggAggregateExec => true
    case PythonAggregates(_, _) => true
    case _ => false
  }

  /**
   * What rules recorded about the final aggregate `agg`: on it, on its phases below (partial
   * aggregates, exchanges, stages, markers) and on the logical aggregate a strategy planned it
   * from, each once, in order; the markers' and skewagg's own aggregates' rewrites included.
   */
  def recordedAbout(agg: SparkPlan): Seq[SkewAggDecision] = {
    val below = PartialAggregates.phasesBelow(agg)
    val own = agg match {
      case s: SkewAggAggregateExec => Seq(SkewAggDecision.Rewritten(s.decision, s.nodeName))
      case _ => Nil
    }
    val marked = below.collect {
      case m: SkewAggLocalStageExec => m.rewrite.copy(what = m.decision)
    }
    val recorded = (agg +: below).flatMap { p =>
      RecordedDecisions.aboutAggregate(p) ++
        PlanNodes.logicalOf(p).toSeq.flatMap(RecordedDecisions.aboutAggregate)
    }
    (own ++ marked ++ recorded).distinct
  }

  /**
   * Why the final aggregate `agg` was left alone, beside what rules recorded about it; None when
   * it was rewritten, when a rule's record says it all (a rule measured the sizes; or skewed in
   * a shape no rewrite matches, where a rule recorded why).
   */
  def reason(agg: SparkPlan, conf: SQLConf, adaptive: Boolean): Option[SkewAggDecision] = {
    val recorded = recordedAbout(agg)
    if (recorded.exists(_.isInstanceOf[SkewAggDecision.Rewritten])) return None
    val shown = fromPlan(agg, conf, adaptive)
    val measured = recorded.exists(_.isInstanceOf[NotSkewed])
    shown.filterNot(s => recorded.nonEmpty && (measured || s.isInstanceOf[SkewedNoMatch]))
  }

  private def fromPlan(agg: SparkPlan, conf: SQLConf, adaptive: Boolean): Option[SkewAggDecision] =
    agg match {
      case PythonAggregates(_, _) =>
        Some(Refused(
          "a Python UDAF (pandas_udf) cannot be split into partial and final halves.",
          EveryRewrite))
      case _ if !SkewAggConf.enabled(conf) =>
        Some(Refused(s"skewagg is off (${SkewAggConf.ENABLED.key}=false).", EveryRewrite))
      case _ =>
        val partial = PartialAggregates.bottomPartialBelow(agg)
        if ((agg +: partial.toSeq).exists(SkewAggHints.forbidden)) {
          Some(Refused(s"hint ${SkewAggHints.Forbid}.", EveryRewrite))
        } else partial match {
          // Spark fused the two halves: skewagg's rules split such an aggregate as they split
          // its partial half, so its reason is read from its input the same way.
          case None if FusedAggregates.isFused(agg) => fromInput(agg, agg, conf, adaptive)
          case None =>
            Some(Refused(
              "Spark plans this aggregate in one phase (no partial aggregate), so " +
                "there is no partial result to exchange.",
              EveryRewrite))
          case Some(p) => fromInput(agg, p, conf, adaptive)
        }
    }

  /** Why the partial aggregate of `agg` was not rewritten, from what it reads. */
  private def fromInput(
      agg: SparkPlan,
      partial: SparkPlan,
      conf: SQLConf,
      adaptive: Boolean): Option[SkewAggDecision] = {
    val input = PartialAggregates.inputBelow(PartialAggregates.unwrap(partial).children.head)
    val shuffles: Seq[SparkPlan] = input match {
      case j: ShuffledJoin => j.children.map(PartialAggregates.inputBelow)
      case other => Seq(other)
    }
    val what = if (input.isInstanceOf[ShuffledJoin]) "the join's input shuffles" else "the shuffle"
    val materialized = shuffles.collect {
      case s: ShuffleQueryStageExec if s.isMaterialized && s.mapStats.isDefined =>
        s.mapStats.get.bytesByPartitionId
    }
    if (materialized.nonEmpty) {
      val (sizes, skew) = materialized.map(s => (s, SkewedPartitions.find(s, conf)))
        .maxBy(_._1.max)
      if (skew.nonEmpty) {
        Some(SkewedNoMatch(SkewAggLocalStageExec.describe("partition", skew)))
      } else Some(NotSkewed.ofShuffle(s"$what below", sizes, conf))
    } else if (shuffles.exists(isShuffle)) {
      if (adaptive) Some(Pending(s"the sizes of $what below"))
      else {
        Some(Refused(
          s"$what below is sized only at run time, and adaptive execution is off " +
            s"(${SQLConf.ADAPTIVE_EXECUTION_ENABLED.key}=false). Turn it on, or put the " +
            s"${SkewAggHints.Force} hint on the aggregate.",
          EveryRewrite))
      }
    } else input match {
      case s: FileSourceScanExec if s.bucketedScan =>
        Some(Refused(
          "the bucket files are not skewed by skewagg's thresholds " +
            s"(${SkewAggConf.SKEW_FACTOR.key}=${conf.getConf(SkewAggConf.SKEW_FACTOR)}, " +
            s"${SkewAggConf.SKEW_MIN_PARTITION_SIZE.key}=" +
            s"${SkewAggLocalStageExec.bytes(conf.getConf(SkewAggConf.SKEW_MIN_PARTITION_SIZE))}).",
          EveryRewrite))
      case _ => mergeOfPartialStates(agg, partial, conf, adaptive)
    }
  }

  /**
   * Why an aggregate whose partial half reads no shuffle is left alone: Spark aggregates each
   * task's rows before its exchange of partial results, so a hot key's rows are combined per
   * task. What the final half merges is then one partial state per map task and key
   * ([[PartialStateMerge]]); where those states are heavy and a partition of them is above the
   * per-slot share, that merge is the hot task: the rule that splits it recorded what it did or
   * why not. Under adaptive execution before that exchange ran: pending.
   */
  private def mergeOfPartialStates(
      agg: SparkPlan,
      partial: SparkPlan,
      conf: SQLConf,
      adaptive: Boolean): Option[SkewAggDecision] = {
    val combined = Refused(
      "Spark's own plan already aggregates each task's rows before the " +
        "shuffle, so a hot key's rows are combined per task and there is nothing to split.",
      EveryRewrite)
    val exchange = if (agg eq partial) None
    else agg.children.headOption
      .map(PartialAggregates.inputBelow)
    exchange match {
      case Some(s: ShuffleQueryStageExec) if s.isMaterialized && s.mapStats.isDefined =>
        PartialStateMerge.of(s, conf).filter(_.isHot(conf)).fold[Option[SkewAggDecision]](
          Some(combined)) { merge =>
          Some(SkewedNoMatch(
            "Spark's own plan aggregates each task's rows before the shuffle, and the final " +
              s"merge reads one partial state per map task and key: ${merge.describe}, merged " +
              "in one task"))
        }
      case Some(e) if adaptive && isShuffle(e) =>
        Some(Pending("the sizes of the exchange of partial results"))
      case _ => Some(combined)
    }
  }

  private def isShuffle(plan: SparkPlan): Boolean = plan match {
    case _: ShuffleExchangeLike | _: ShuffleQueryStageExec => true
    case _ => false
  }
}
