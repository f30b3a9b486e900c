package org.apache.spark.sql.skewagg

import org.apache.spark.sql.internal.SQLConf

/**
 * Which partitions of a shuffle (or bucketed scan) are skewed: larger than
 * `spark.skewagg.skew.minPartitionSize` and than `spark.skewagg.skew.factor` times the per-slot
 * share of the whole (`total / slots`, [[TaskSlots]]), however large the other partitions are:
 * splitting pays where a partition outlasts an even share of the work on the slots that run it.
 * One partition holding a whole stage (a window without PARTITION BY), or a few keys in about as
 * many partitions on many more slots, is skewed where a test against the median would find it
 * typical. The median is kept to describe the partitions, not to decide.
 */
case class SkewedPartitions(
    medianSize: Long,
    threshold: Long,
    skewed: Seq[(Int, Long)],
    total: Long = 0L,
    slots: Int = 1,
    inRows: Boolean = false) {
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

  /** The size above which a partition is skewed, given the per-slot share. */
  def threshold(slotShare: Long, conf: SQLConf): Long =
    threshold(slotShare, conf, conf.getConf(SkewAggConf.SKEW_MIN_PARTITION_SIZE))

  /** [[threshold]] with another floor than `spark.skewagg.skew.minPartitionSize`. */
  def threshold(slotShare: Long, conf: SQLConf, floor: Long): Long =
    math.max(floor, (slotShare * conf.getConf(SkewAggConf.SKEW_FACTOR)).toLong)

  /** The skew test on the slots a stage of `sizes.length` tasks runs on. */
  def find(sizes: Array[Long], conf: SQLConf): SkewedPartitions =
    find(sizes, conf, TaskSlots.of(conf, sizes.length))

  /**
   * The slots of a stage that reads a shuffle of `partitions` partitions split into up to
   * `splitTasks` tasks, as many as the split can make ([[TaskSlots]]).
   */
  def slotsOfSplit(partitions: Int, conf: SQLConf, splitTasks: Int): Int =
    TaskSlots.of(conf, math.max(partitions, splitTasks))

  /** The skew test on `slots` task slots. */
  def find(sizes: Array[Long], conf: SQLConf, slots: Int): SkewedPartitions =
    find(sizes, conf, slots, conf.getConf(SkewAggConf.SKEW_MIN_PARTITION_SIZE))

  /**
   * Skew measured in `rows` where they are known (a hot key compresses to few bytes per row, so
   * bytes understate its work): against the per-slot share, and, by `atFloor` (the
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

  private def find(
      sizes: Array[Long],
      conf: SQLConf,
      slots: Int,
      floor: Long): SkewedPartitions = {
    if (sizes.isEmpty) return SkewedPartitions(0L, 0L, Nil, 0L, slots)
    val sorted = sizes.sorted
    val total = sizes.sum
    val limit = threshold(total / math.max(slots, 1), conf, floor)
    SkewedPartitions(
      sorted(sorted.length / 2),
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
  def splitSize(sizes: Array[Long], skew: SkewedPartitions, conf: SQLConf): Long =
    splitSize(sizes, skew, conf.getConf(SkewAggConf.SKEW_MIN_SPLIT_SIZE))

  /** [[splitSize]] with another smallest piece than `spark.skewagg.skew.minSplitSize`. */
  def splitSize(sizes: Array[Long], skew: SkewedPartitions, minSplit: Long): Long = {
    val skewedIds = skew.skewed.map(_._1).toSet
    val normal = sizes.indices.filterNot(skewedIds).map(sizes(_))
    math.max(minSplit, if (normal.isEmpty) 0L else normal.sum / normal.length)
  }

  /**
   * The size of the pieces an aggregate's split reads a skewed partition of a stage of `sizes`
   * in: [[splitSize]], and at least 1/[[PiecesPerSlot]] of the per-slot share of `sizes` (in
   * their own measure, bytes where the test counted rows), so that the pieces of every skewed
   * partition together are at most about that many per slot, however many partitions are skewed
   * (where every partition is skewed there is no average of the others, and pieces of the
   * smallest size would be hundreds: a join's piece reads the other side's partition again).
   * List-scheduled, a stage of such pieces ends within 1/[[PiecesPerSlot]] of a share after an
   * even share.
   */
  def pieceSize(sizes: Array[Long], skew: SkewedPartitions, conf: SQLConf): Long =
    pieceSize(sizes, skew, conf.getConf(SkewAggConf.SKEW_MIN_SPLIT_SIZE))

  /** [[pieceSize]] with another smallest piece than `spark.skewagg.skew.minSplitSize`. */
  def pieceSize(sizes: Array[Long], skew: SkewedPartitions, minSplit: Long): Long =
    math.max(splitSize(sizes, skew, minSplit), smallestPiece(sizes.sum, skew.slots))

  /** The pieces of a split per task slot at most: their smallest size is a share over this. */
  val PiecesPerSlot = 4

  /** The smallest piece of a split of a stage of `total` on `slots`: [[pieceSize]]. */
  def smallestPiece(total: Long, slots: Int): Long = total / math.max(slots, 1) / PiecesPerSlot
}
