package org.apache.spark.sql.skewagg

import org.apache.spark.sql.internal.SQLConf

/**
 * Which partitions of a shuffle (or bucketed scan) are skewed: larger than
 * `spark.skewagg.skew.minPartitionSize`, than `spark.skewagg.skew.factor` times the median
 * partition, and than that factor times the per-slot share of the whole (`total / slots`,
 * [[TaskSlots]]): splitting pays only where the hot partition outlasts an even share of the work
 * on the slots that run it.
 */
case class SkewedPartitions(
    medianSize: Long,
    threshold: Long,
    skewed: Seq[(Int, Long)],
    total: Long = 0L,
    slots: Int = 1) {
  def nonEmpty: Boolean = skewed.nonEmpty

  /** The even share of the whole per task slot. */
  def slotShare: Long = total / math.max(slots, 1)
}

object SkewedPartitions {

  /** The size above which a partition is skewed, given the median and the per-slot share. */
  def threshold(medianSize: Long, slotShare: Long, conf: SQLConf): Long = {
    val factor = conf.getConf(SkewAggConf.SKEW_FACTOR)
    math.max(
      conf.getConf(SkewAggConf.SKEW_MIN_PARTITION_SIZE),
      math.max((medianSize * factor).toLong, (slotShare * factor).toLong))
  }

  def find(sizes: Array[Long], conf: SQLConf): SkewedPartitions =
    find(sizes, conf, TaskSlots.of(conf))

  def find(sizes: Array[Long], conf: SQLConf, slots: Int): SkewedPartitions = {
    if (sizes.isEmpty) return SkewedPartitions(0L, 0L, Nil, 0L, slots)
    val sorted = sizes.sorted
    val median = sorted(sorted.length / 2)
    val total = sizes.sum
    val limit = threshold(median, total / math.max(slots, 1), conf)
    SkewedPartitions(
      median,
      limit,
      sizes.zipWithIndex.collect {
        case (size, i) if size > limit => (i, size)
      }.toSeq,
      total,
      slots)
  }

  /**
   * The size of the pieces a skewed partition is read in: the average partition that is not
   * skewed, at least `spark.skewagg.skew.minSplitSize`.
   */
  def splitSize(sizes: Array[Long], skew: SkewedPartitions, conf: SQLConf): Long = {
    val skewedIds = skew.skewed.map(_._1).toSet
    val normal = sizes.indices.filterNot(skewedIds).map(sizes(_))
    math.max(
      conf.getConf(SkewAggConf.SKEW_MIN_SPLIT_SIZE),
      if (normal.isEmpty) 0L else normal.sum / normal.length)
  }
}
