package org.apache.spark.sql.skewagg.skewsplit

import org.apache.spark.MapOutputStatistics
import org.apache.spark.sql.execution.{CoalescedPartitionSpec, ShufflePartitionSpec}
import org.apache.spark.sql.execution.adaptive.ShufflePartitionsUtil

/**
 * The read specs of a shuffle whose `skewed` partitions are read in map-output ranges of about
 * `target` bytes (as Spark's skew join cuts them), every other partition whole. `pieces`: the
 * specs of the partitions that split; `splitPartitions`: how many did (a partition one map task
 * wrote, or whose sizes the tracker lost, is read whole).
 */
case class SkewedPartitionReads(
    specs: Seq[ShufflePartitionSpec],
    pieces: Int,
    splitPartitions: Int) {

  /** The tasks the split adds: its pieces beyond one per partition split. */
  def added: Int = pieces - splitPartitions
}

object SkewedPartitionReads {
  def of(stats: MapOutputStatistics, skewed: Set[Int], target: Long): SkewedPartitionReads = {
    val sizes = stats.bytesByPartitionId
    var pieces = 0
    var splitPartitions = 0
    val specs = sizes.indices.flatMap { i =>
      val whole = Seq(CoalescedPartitionSpec(i, i + 1, sizes(i)))
      if (!skewed(i)) whole
      else ShufflePartitionsUtil.createSkewPartitionSpecs(stats.shuffleId, i, target) match {
        case Some(split) =>
          pieces += split.size
          splitPartitions += 1
          split
        case None => whole
      }
    }
    SkewedPartitionReads(specs, pieces, splitPartitions)
  }
}
