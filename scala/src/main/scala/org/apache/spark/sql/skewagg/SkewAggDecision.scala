package org.apache.spark.sql.skewagg

import org.apache.spark.internal.config.ConfigEntry
import org.apache.spark.sql.internal.SQLConf

/**
 * What a skewagg rule decided about one aggregate, recorded where it decided
 * ([[SkewAggDecisions.record]]) and printed, never re-derived, by the explanation. Each kind says
 * what the rule saw: the numbers it rewrote on, the switch that stopped it, or why it refused.
 */
sealed trait SkewAggDecision {

  /** One line of the explanation, e.g. "left alone by ...: switched off (KEY=false)." */
  def text: String
}

object SkewAggDecision {

  /** Rewritten by `rewrite`, with the numbers it decided on. */
  final case class Rewritten(rewrite: String) extends SkewAggDecision {
    override def text: String = s"rewritten: $rewrite"
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
   * more than `factor` times the median (`spark.skewagg.skew.factor`) or times the per-slot share
   * on `slots` task slots ([[TaskSlots]]).
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
      belowFloor: Boolean = false)
      extends SkewAggDecision {
    override def text: String = {
      def size(n: Long) = SkewedPartitions.format(n, inRows)
      val ratio = if (median > 0) f"${largest.toDouble / median}%.1fx" else "n/a x"
      val why = if (belowFloor) {
        s"below the ${SkewAggLocalStageExec.bytes(floor)} floor " +
          s"(${SkewAggConf.SKEW_MIN_PARTITION_SIZE.key})"
      } else if (largest > factor * median) {
        s"not more than ${factor}x the per-slot share ${size(slotShare)} " +
          s"on $slots task slots (${SkewAggConf.SKEW_TASK_SLOTS.key})"
      } else {
        s"not more than ${factor}x the median (${SkewAggConf.SKEW_FACTOR.key})"
      }
      s"not skewed: in $where, the largest partition ($largestId) is " +
        s"${size(largest)}, $ratio the median ${size(median)}: $why."
    }
  }

  object NotSkewed {

    /** What `conf`'s skew test found in partitions of `sizes` bytes (none of them skewed). */
    def of(where: String, sizes: Array[Long], conf: SQLConf): NotSkewed =
      of(where, sizes, sizes, SkewedPartitions.find(sizes, conf), conf)

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

  /** Refused for `reason`, a sentence that says what would make the rule go ahead if anything. */
  final case class Refused(reason: String) extends SkewAggDecision {
    override def text: String = s"left alone: $reason"
  }

  /** Part of a rewrite not done (e.g. hot keys not split), beside the rewrite that was done. */
  final case class NotDone(part: String, reason: String) extends SkewAggDecision {
    override def text: String = s"$part: $reason"
  }
}
