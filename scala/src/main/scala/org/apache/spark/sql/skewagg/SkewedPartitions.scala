package org.apache.spark.sql.skewagg

import org.apache.spark.sql.internal.SQLConf

/**
 * Which partitions of a shuffle (or bucketed scan) are skewed: larger than
 * `spark.skewagg.skew.minPartitionSize`, than `spark.skewagg.skew.factor` times the median
 * partition (unless `againstMedian` is false: [[bySlotShare]]), and than that factor times the
 * per-slot share of the whole (`total / slots`, [[TaskSlots]]): splitting pays only where the hot
 * partition outlasts an even share of the work on the slots that run it.
 */
case class SkewedPartitions(
    medianSize: Long,
    threshold: Long,
    skewed: Seq[(Int, Long)],
    total: Long = 0L,
    slots: Int = 1,
    inRows: Boolean = false,
    againstMedian: Boolean = true) {
  def nonEmpty: Boolean = skewed.nonEmpty

  /** The even share of the whole per task slot. */
  def slotShare: Long = total / math.max(slots, 1)

  /** A size as these partitions are measured: "4.2 MiB", or "61,234 rows". */
  def format(size: Long): String = SkewedPartitions.format(size, inRows)
}

object SkewedPartitions {

  /** A size in rows ("61,234 rows") or bytes ("4.2 MiB"). */
  def format(size: Long, inRows: Boolean): String =
    if (inRows) f"$size%,d rows" else org.apache.spark.util.Utils.bytesToString(size)

  /** The size above which a partition is skewed, given the median and the per-slot share. */
  def threshold(medianSize: Long, slotShare: Long, conf: SQLConf): Long =
    threshold(medianSize, slotShare, conf, conf.getConf(SkewAggConf.SKEW_MIN_PARTITION_SIZE))

  /** [[threshold]] with another floor than `spark.skewagg.skew.minPartitionSize`. */
  def threshold(medianSize: Long, slotShare: Long, conf: SQLConf, floor: Long): Long = {
    val factor = conf.getConf(SkewAggConf.SKEW_FACTOR)
    math.max(floor, math.max((medianSize * factor).toLong, (slotShare * factor).toLong))
  }

  def find(sizes: Array[Long], conf: SQLConf): SkewedPartitions =
    find(sizes, conf, TaskSlots.of(conf, sizes.length))

  /**
   * The per-slot share alone decides: a partition is skewed when it is larger than the floor and
   * than the skew factor times the even share of the whole per task slot, however large the other
   * partitions are. So one partition holding a whole stage (a window without PARTITION BY), or a
   * few keys in about as many partitions on many more slots, is skewed where the median test
   * would find it typical. `slots`: those of the stage the split runs ([[slotsOfSplit]]).
   */
  def bySlotShare(sizes: Array[Long], conf: SQLConf, slots: Int): SkewedPartitions = find(
    sizes,
    conf,
    slots,
    conf.getConf(SkewAggConf.SKEW_MIN_PARTITION_SIZE),
    againstMedian = false)

  /**
   * The slots of a stage that reads a shuffle of `partitions` partitions split into up to
   * `splitTasks` tasks, as many as the split can make ([[TaskSlots]]).
   */
  def slotsOfSplit(partitions: Int, conf: SQLConf, splitTasks: Int): Int =
    TaskSlots.of(conf, math.max(partitions, splitTasks))

  def find(sizes: Array[Long], conf: SQLConf, slots: Int): SkewedPartitions =
    find(sizes, conf, slots, conf.getConf(SkewAggConf.SKEW_MIN_PARTITION_SIZE))

  /**
   * Skew measured in `rows` where they are known (a hot key compresses to few bytes per row, so
   * bytes understate its work): against the median and the per-slot share, and, by `atFloor` (the
   * rows in bytes as the caller weighs them: [[atAverageDensity]], or their size in memory),
   * against the `spark.skewagg.skew.minPartitionSize` floor.
   */
  def findByRows(rows: Array[Long], conf: SQLConf, atFloor: Array[Long]): SkewedPartitions = {
    val byRows = find(rows, conf, TaskSlots.of(conf, rows.length), floor = 0L)
    val floor = conf.getConf(SkewAggConf.SKEW_MIN_PARTITION_SIZE)
    byRows.copy(skewed = byRows.skewed.filter { case (i, _) => atFloor(i) > floor }, inRows = true)
  }

  /**
   * Each partition's rows in bytes at the average bytes per row of all of them: the bytes its
   * rows would take if its values compressed like the others'.
   */
  def atAverageDensity(rows: Array[Long], bytes: Array[Long]): Array[Long] = {
    val perRow = bytes.sum.toDouble / math.max(rows.sum, 1L)
    rows.map(r => (r * perRow).toLong)
  }

  /** `againstMedian` false: the per-slot share alone ([[bySlotShare]]). */
  private def find(
      sizes: Array[Long],
      conf: SQLConf,
      slots: Int,
      floor: Long,
      againstMedian: Boolean = true): SkewedPartitions = {
    if (sizes.isEmpty) {
      return SkewedPartitions(0L, 0L, Nil, 0L, slots, againstMedian = againstMedian)
    }
    val sorted = sizes.sorted
    val median = sorted(sorted.length / 2)
    val total = sizes.sum
    val limit =
      threshold(if (againstMedian) median else 0L, total / math.max(slots, 1), conf, floor)
    SkewedPartitions(
      median,
      limit,
      sizes.zipWithIndex.collect {
        case (size, i) if size > limit => (i, size)
      }.toSeq,
      total,
      slots,
      againstMedian = againstMedian)
  }

  /**
   * The size of the pieces a skewed partition is read in: the average partition that is not
   * skewed, at least `spark.skewagg.skew.minSplitSize`.
   */
  def splitSize(sizes: Array[Long], skew: SkewedPartitions, conf: SQLConf): Long =
    splitSize(sizes, skew, conf.getConf(SkewAggConf.SKEW_MIN_SPLIT_SIZE))

  /** [[splitSize]] with another smallest piece than `spark.skewagg.skew.minSplitSize`. */
  def splitSize(sizes: Array[Long], skew: SkewedPartitions, minSplit: Long): Long = {
    val skewedIds = skew.skewed.map(_._1).toSet
    val normal = sizes.indices.filterNot(skewedIds).map(sizes(_))
    math.max(minSplit, if (normal.isEmpty) 0L else normal.sum / normal.length)
  }
}
