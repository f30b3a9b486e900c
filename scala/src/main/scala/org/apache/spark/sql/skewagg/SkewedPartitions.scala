package org.apache.spark.sql.skewagg

import org.apache.spark.sql.internal.SQLConf

/**
 * Which partitions of a shuffle are skewed: larger than `spark.skewagg.skew.factor` times the
 * median partition and than `spark.skewagg.skew.minPartitionSize`.
 */
case class SkewedPartitions(medianSize: Long, threshold: Long, skewed: Seq[(Int, Long)]) {
  def nonEmpty: Boolean = skewed.nonEmpty
}

object SkewedPartitions {
  def threshold(medianSize: Long, conf: SQLConf): Long =
    math.max(
      conf.getConf(SkewAggConf.SKEW_MIN_PARTITION_SIZE),
      (medianSize * conf.getConf(SkewAggConf.SKEW_FACTOR)).toLong)

  def find(sizes: Array[Long], conf: SQLConf): SkewedPartitions = {
    if (sizes.isEmpty) return SkewedPartitions(0L, 0L, Nil)
    val sorted = sizes.sorted
    val median = sorted(sorted.length / 2)
    val limit = threshold(median, conf)
    SkewedPartitions(
      median,
      limit,
      sizes.zipWithIndex.collect {
        case (size, i) if size > limit => (i, size)
      }.toSeq)
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
