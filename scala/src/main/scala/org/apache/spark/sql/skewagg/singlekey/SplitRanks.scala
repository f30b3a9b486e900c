package org.apache.spark.sql.skewagg.singlekey

/**
 * Where a hot key's ranks lie among its splits (the rank arithmetic of a key split by
 * [[HotKeyRanges]]). `held(i)` is how many ranks split `i` holds, in order:
 * split `i` holds the key-wide ranks `offsets(i) until offsets(i + 1)`. Ranks are 0-based.
 */
final case class SplitRanks(held: IndexedSeq[Long]) {
  require(held.nonEmpty, "a hot key has at least one split")

  /** The rank each split starts at, then the key's total. */
  val offsets: IndexedSeq[Long] = held.scanLeft(0L)(_ + _)

  def total: Long = offsets.last

  /**
   * The split holding key-wide `rank`: the last one starting at or below it (empty ones skipped).
   */
  def splitOf(rank: Long): Int = math.min(offsets.lastIndexWhere(_ <= rank), held.size - 1)

  /** Per split, the ranks within it (ascending) of the key-wide `ranks` it holds. */
  def localRanks(ranks: Seq[Long]): IndexedSeq[Array[Long]] = {
    val bySplit = ranks.groupBy(splitOf)
    held.indices.map(s => bySplit.getOrElse(s, Nil).map(_ - offsets(s)).sorted.toArray)
  }

  /** How many of `pairs` (two ranks a percentile interpolates between) lie in two splits. */
  def straddling(pairs: Seq[(Long, Long)]): Int =
    pairs.count { case (low, high) => splitOf(low) != splitOf(high) }
}
