package org.apache.spark.sql.skewagg.hotkey

import org.apache.spark.sql.catalyst.InternalRow

/**
 * Summaries of type `S` that the routing map tasks make of the split rows they route
 * ([[HotKeySplitSteps.route]]): each map task summarizes the rows it sends to each split (its
 * part of that split) and hands them, by split index, to [[add]] when it ends; once the map
 * stage has run, the driver reads one summary per split ([[summaries]]).
 *
 * Rule: a map task can run more than once (retried, speculated, its stage resubmitted), so
 * [[add]] keeps one entry per map task, replaced by a later run, and [[summaries]] merges one
 * entry per map task, in map task order.
 */
trait SummariesWhileRouting[S] extends Serializable {

  /** In a map task: a maker of one split's summarizer, built once per task and shared. */
  def summarizers(): () => SplitSummarizer[S]

  /** At the end of map task `mapTask`: its summary of each split it routed rows to. */
  def add(mapTask: Int, bySplit: Map[Int, S]): Unit

  /** On the driver, after the map stage: the summary of each of `numSplits` splits, in order. */
  def summaries(numSplits: Int): IndexedSeq[S]
}

/** One split's summary, built a row at a time. */
trait SplitSummarizer[S] {
  def add(row: InternalRow): Unit
  def result: S
}
