package org.apache.spark.sql.skewagg

import org.apache.spark.sql.execution.adaptive.ShuffleQueryStageExec
import org.apache.spark.sql.internal.SQLConf

/**
 * What the final half of an aggregate merges from a finished exchange of partial results: one
 * partial state per map task and key. `perState` is the exchange's bytes over its rows; the
 * partitions are skewed by the per-slot share ([[SkewedPartitions.find]]): with few keys the
 * other partitions are empty or as large. The merge is the work where states
 * are heavy ([[isHeavy]]: sketches, collected lists); a sum's merge is cheap whatever its skew.
 */
case class PartialStateMerge(stage: ShuffleQueryStageExec, perState: Long, skew: SkewedPartitions) {

  def isHeavy(conf: SQLConf): Boolean =
    perState >= conf.getConf(SkewAggConf.PARTIAL_STATES_MIN_STATE_SIZE)

  /** Heavy states and a partition of them above the per-slot share: its merge is the hot task. */
  def isHot(conf: SQLConf): Boolean = isHeavy(conf) && skew.nonEmpty

  /**
   * "partition 3 holds 840.0 MiB of the states of 400 map tasks (2.1 MiB a state), 16x the
   * per-slot share 52.5 MiB on 64 task slots (and 3 more)", for the largest skewed partition.
   */
  def describe: String = skew.skewed.sortBy(-_._2).headOption.fold("no skewed partition") {
    case (id, size) =>
      val more = if (skew.skewed.size > 1) s" (and ${skew.skewed.size - 1} more)" else ""
      s"partition $id holds ${skew.format(size)} of the states of " +
        f"${stage.shuffle.numMappers}%,d map tasks (${skew.format(perState)} a state), " +
        f"${size.toDouble / math.max(skew.slotShare, 1L)}%.0fx the per-slot share " +
        s"${skew.format(skew.slotShare)} on ${skew.slots} task slots$more"
  }
}

object PartialStateMerge {

  /** The merge of the states in `stage`, once it ran; None before. */
  def of(stage: ShuffleQueryStageExec, conf: SQLConf): Option[PartialStateMerge] =
    Some(stage).filter(_.isMaterialized).flatMap(_.mapStats).map { stats =>
      val sizes = stats.bytesByPartitionId
      val states = stage.getRuntimeStatistics.rowCount.getOrElse(BigInt(0))
      val perState = if (states > 0) (BigInt(sizes.sum) / states).toLong else 0L
      PartialStateMerge(
        stage,
        perState,
        SkewedPartitions.find(sizes, conf))
    }
}
