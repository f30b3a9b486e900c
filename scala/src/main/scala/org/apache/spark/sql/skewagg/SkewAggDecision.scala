package org.apache.spark.sql.skewagg

import org.apache.spark.internal.config.ConfigEntry
import org.apache.spark.sql.internal.SQLConf

/**
 * What skewagg decided, recorded where it decided ([[RecordedDecisions]]) and printed, never
 * re-derived, by the explanation and the Python bridge: about an aggregate (rewritten, switched
 * off, not skewed, refused, a part not done), about a rewrite once its query ran ([[AtRunTime]]:
 * on the operator or marker concerned), or about a planning step that failed ([[FellBack]]). Each
 * kind says what was seen: the numbers a rewrite was decided on, the switch that stopped it, or
 * why it was refused.
 */
sealed trait SkewAggDecision {

  /** One line of the explanation, e.g. "left alone by ...: switched off (KEY=false)." */
  def text: String
}

object SkewAggDecision {

  /**
   * Rewritten by the rewrite named `rewrite` (e.g. "local aggregate before the join"): `what` it
   * did, with the numbers it was decided on. A rule never records a [[Refused]] of the same name
   * on the aggregate it rewrote: that would be a rule changing its mind when adaptive execution
   * re-plans (the differential tests check every plan they run).
   */
  final case class Rewritten(what: String, rewrite: String) extends SkewAggDecision {
    override def text: String = s"rewritten: $what"
  }

  /**
   * A rewrite that would have applied here, stopped by its switch `key` being false; `notDone`
   * says what did not happen ("no local aggregation before the join").
   */
  final case class SwitchedOff(notDone: String, key: String) extends SkewAggDecision {
    override def text: String = s"$notDone: switched off ($key=false)."
  }

  object SwitchedOff {
    def apply(notDone: String, entry: ConfigEntry[Boolean]): SwitchedOff =
      SwitchedOff(notDone, entry.key)
  }

  /**
   * Looked at and found not skewed by skewagg's thresholds: in `where` (e.g. "the join's input
   * shuffles below"), the largest partition `largestId` of `largest` bytes (or rows, `inRows`),
   * its bytes under the `floor` (`spark.skewagg.skew.minPartitionSize`, `belowFloor`), or not
   * more than `factor` times (`spark.skewagg.skew.factor`) the per-slot share on `slots` task
   * slots ([[TaskSlots]]); or, where Spark `averaged` the shuffle's block sizes
   * ([[AveragedBlockSizes]]), unseen.
   */
  final case class NotSkewed(
      where: String,
      largestId: Int,
      largest: Long,
      median: Long,
      floor: Long,
      factor: Double,
      slots: Int,
      slotShare: Long,
      inRows: Boolean = false,
      belowFloor: Boolean = false,
      averaged: Option[AveragedBlockSizes.Averaged] = None)
      extends SkewAggDecision {

    /** Which threshold the largest partition did not pass: "below the 16.0 MiB floor (...)". */
    def why: String = {
      if (belowFloor) {
        s"below the ${SkewAggLocalStageExec.bytes(floor)} floor " +
          s"(${SkewAggConf.SKEW_MIN_PARTITION_SIZE.key})"
      } else {
        s"not more than ${factor}x the per-slot share " +
          s"${SkewedPartitions.format(slotShare, inRows)} on $slots task slots " +
          s"(${SkewAggConf.SKEW_TASK_SLOTS.key})"
      }
    }

    override def text: String = {
      def size(n: Long) = SkewedPartitions.format(n, inRows)
      val ratio = if (median > 0) f"${largest.toDouble / median}%.1fx" else "n/a x"
      val found = s"the largest partition ($largestId) is ${size(largest)}, $ratio the median " +
        size(median)
      averaged match {
        case Some(a) => s"skew unseen: in $where, ${a.text(factor)} (On those sizes $found.)"
        case None => s"not skewed: in $where, $found: $why."
      }
    }
  }

  object NotSkewed {

    /**
     * What `conf`'s skew test found in a shuffle's partitions of `sizes` bytes (none of them
     * skewed), and whether Spark averaged those sizes ([[AveragedBlockSizes.measured]]).
     */
    def ofShuffle(where: String, sizes: Array[Long], conf: SQLConf): NotSkewed =
      ofShuffle(where, sizes, SkewedPartitions.find(sizes, conf), conf)

    /** [[ofShuffle]] with what another skew test (`skew`) found. */
    def ofShuffle(
        where: String,
        sizes: Array[Long],
        skew: SkewedPartitions,
        conf: SQLConf): NotSkewed =
      of(where, sizes, sizes, skew, conf)
        .copy(averaged = AveragedBlockSizes.measured(sizes.length, conf))

    /**
     * What `skew`, measured on `sizes` (bytes, or rows where `skew.inRows`), found: partitions of
     * `bytes`, none of them skewed.
     */
    def of(
        where: String,
        sizes: Array[Long],
        bytes: Array[Long],
        skew: SkewedPartitions,
        conf: SQLConf): NotSkewed = {
      val largest = if (sizes.isEmpty) 0 else sizes.indices.maxBy(sizes(_))
      val floor = conf.getConf(SkewAggConf.SKEW_MIN_PARTITION_SIZE)
      NotSkewed(
        where,
        largest,
        if (sizes.isEmpty) 0L else sizes(largest),
        skew.medianSize,
        floor,
        conf.getConf(SkewAggConf.SKEW_FACTOR),
        skew.slots,
        skew.slotShare,
        skew.inRows,
        belowFloor = bytes.isEmpty || bytes(largest) <= floor)
    }
  }

  /**
   * The rewrite named `rewrite` refused for `reason`, a sentence that says what would make the
   * rule go ahead if anything; [[Refused.EveryRewrite]]: no rewrite applies (skewagg off, a hint,
   * the aggregate's shape), recorded only on an aggregate nothing rewrote.
   */
  final case class Refused(reason: String, rewrite: String) extends SkewAggDecision {
    override def text: String = s"left alone: $reason"
  }

  object Refused {
    val EveryRewrite = "every rewrite"
  }

  /**
   * The contradictions among `decisions` (about one aggregate or window): a [[Refused]] and a
   * [[Rewritten]] by the same rewrite, or a refusal of every rewrite beside a rewrite.
   */
  def contradictions(decisions: Seq[SkewAggDecision]): Seq[(Refused, Rewritten)] = for {
    refused @ Refused(_, by) <- decisions
    rewritten @ Rewritten(_, done) <- decisions
    if by == done || by == Refused.EveryRewrite
  } yield (refused, rewritten)

  /**
   * Skewed (`skew`: the largest skewed partition and its numbers), but no rewrite matches the
   * plan's shape: recorded where no rule looked ([[LeftAloneReasons]]).
   */
  final case class SkewedNoMatch(skew: String) extends SkewAggDecision {
    override def text: String =
      s"left alone although skewed ($skew): no skewagg rewrite matches this plan shape " +
        "(see docs/rewrites.md)."
  }

  /**
   * To be decided once the query ran: `waitsFor` (the sizes of the shuffle below). Replaced on
   * its node by the decision that settles it ([[RecordedDecisions.note]]).
   */
  final case class Pending(waitsFor: String) extends SkewAggDecision {
    override def text: String =
      s"not decided yet: skewagg decides from $waitsFor once it ran. Run the query (e.g. " +
        "df.collect()) and explain it again. " + Pending.connect
  }

  object Pending {

    /**
     * Where a Spark Connect client finds the decisions: its explain plans the query anew, never
     * the plan that ran.
     */
    val connect: String = "With Spark Connect, whose explain plans the query anew and never " +
      "shows a run's decisions: run it, then skewagg.explain(df) (SQL: SELECT * FROM " +
      "skewagg_explain(TABLE(q)))."
  }

  /** Part of a rewrite not done (e.g. hot keys not split), beside the rewrite that was done. */
  final case class NotDone(part: String, reason: String) extends SkewAggDecision {
    override def text: String = s"$part: $reason"
  }

  /**
   * Decided while the query ran, about `step` of a rewrite (the merge after a join's shuffle, the
   * join below a local aggregate, a hot-key split): `what` it found and did, with its numbers;
   * `leftAlone` when what it found kept Spark's plan (a split that would not pay). A later
   * decision about the same step replaces it ([[RecordedDecisions.note]]).
   */
  final case class AtRunTime(step: String, what: String, leftAlone: Boolean = false)
      extends SkewAggDecision {
    override def text: String = what
  }

  /** The planning step `step` threw `error`: the query kept Spark's own plan for that step. */
  final case class FellBack(step: String, error: String) extends SkewAggDecision {
    override def text: String =
      s"$step failed while planning ($error); Spark's own plan was kept for that step."
  }
}
