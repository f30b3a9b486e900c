package org.apache.spark.sql.skewagg.window

import org.apache.spark.sql.execution.{
  CoalescedPartitionSpec, PartialReducerPartitionSpec, ShufflePartitionSpec
}
import org.apache.spark.sql.skewagg.SkewedPartitions

/**
 * Whether a window split pays, from the sizes it would read: the stage of Spark's window it
 * replaces against the three stages it runs instead, each on `slots` slots as long as its longest
 * task or its even share, whichever is longer, weighed by what a row costs there against a row
 * of Spark's sort and window:
 *
 *  - Spark's window: the largest skewed partition (the task the split cuts), or the stage's
 *    even share;
 *  - the sample, [[SampleWeight]]: the largest map output it reads, or the share of all it reads;
 *  - the routing, [[RouteWeight]]: the largest piece, or the share of all pieces;
 *  - the splits' evaluation, [[EvaluateWeight]]: the largest partition left as Spark reads it,
 *    the splits' own size (a piece, or the partition over the most splits), or the stage's share.
 *
 * The split is made when Spark's stage is longer than the three (`pays`). The weights are what
 * those stages cost per row read against Spark's window in `benchmarks/window_split_costs.py`
 * (docs/window.md, "When a window split pays"): the highest measured, rounded up. A hot
 * partition its input wrote in one or two map tasks is sampled and routed by as few tasks (no
 * piece is smaller than a map output), each reading as much as Spark's one task: that split
 * does not pay.
 */
final case class WindowSplitCost(
    slots: Int,
    sparkStage: Double,
    sample: Double,
    route: Double,
    evaluate: Double) {

  /** The split's three stages, weighed. */
  def split: Double =
    WindowSplitCost.SampleWeight * sample + WindowSplitCost.RouteWeight * route +
      WindowSplitCost.EvaluateWeight * evaluate

  def pays: Boolean = split < sparkStage

  /** "about 0.06x of Spark's stage of 58.2 MiB on 64 slots: its sample's longest read ...". */
  def describe(format: Long => String): String =
    f"about ${split / sparkStage}%.2fx of Spark's stage of ${format(sparkStage.toLong)} on " +
      s"$slots slots: its sample's longest read ${format(sample.toLong)}, routing " +
      s"${format(route.toLong)}, splits ${format(evaluate.toLong)}, weighed " +
      s"${WindowSplitCost.SampleWeight}, ${WindowSplitCost.RouteWeight} and " +
      s"${WindowSplitCost.EvaluateWeight} a byte against Spark's window"
}

object WindowSplitCost {

  /** A row the sample reads, against a row of Spark's sort and window (measured 0.37-0.72). */
  val SampleWeight: Double = 0.75

  /** A row the routing reads, summarizes and writes (measured 0.93-1.56). */
  val RouteWeight: Double = 1.6

  /** A row of a split, read, sorted and evaluated in a small task (measured 1.09-1.67). */
  val EvaluateWeight: Double = 1.7

  /**
   * The cost of splitting `skew`'s partitions of a shuffle of `sizes` (by reducer) into `pieces`
   * of about `pieceSize`, sampling `sampled`, with at most `maxSplits` splits a key, beside the
   * specs left as Spark reads them (`ordinary`).
   */
  def of(
      sizes: Array[Long],
      skew: SkewedPartitions,
      pieces: Seq[ShufflePartitionSpec],
      pieceSize: Long,
      ordinary: Seq[ShufflePartitionSpec],
      sampled: Seq[ShufflePartitionSpec],
      maxSplits: Int): WindowSplitCost = {
    val slots = math.max(skew.slots, 1)
    def stage(specs: Seq[ShufflePartitionSpec], atLeast: Double = 0): Double = {
      val bytes = specs.map(sizeOf(sizes, _))
      math.max(atLeast, math.max(bytes.foldLeft(0L)(math.max), bytes.sum / slots))
    }
    val largest = skew.skewed.map(_._2).foldLeft(0L)(math.max)
    val share = sizes.sum.toDouble / slots
    WindowSplitCost(
      slots,
      math.max(largest, share),
      stage(sampled),
      stage(pieces),
      stage(ordinary, math.max(share, math.max(pieceSize, largest / math.max(maxSplits, 1)))))
  }

  /** A spec's bytes: a piece's, or its reducers' sizes. */
  private def sizeOf(sizes: Array[Long], spec: ShufflePartitionSpec): Long = spec match {
    case p: PartialReducerPartitionSpec => p.dataSize
    case c: CoalescedPartitionSpec => c.dataSize.getOrElse(
        WindowSplitPlan.reducers(c).map(sizes(_)).sum)
    case _ => 0L // (read in pieces by another rule: not the split's)
  }
}
