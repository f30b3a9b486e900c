package org.apache.spark.sql.skewagg.window

import scala.collection.mutable

import org.apache.spark.sql.skewagg.hotkey.{SummariesWhileRouting, SplitSummarizer}
import org.apache.spark.util.AccumulatorV2

/**
 * The summaries the routing map tasks make of the split rows they route: per map task (its
 * partition index), per split it routed rows to, the summary of those rows.
 *
 * Rule: keyed by map task, so a task run again (retried, speculated, its stage resubmitted)
 * replaces its own entry, and what the driver reads is one summary per map task, whatever ran.
 */
final class SummariesByMapTask
    extends AccumulatorV2[(Int, Map[Int, SplitSummary]), Map[Int, Map[Int, SplitSummary]]] {

  private val byMapTask = mutable.HashMap.empty[Int, Map[Int, SplitSummary]]

  override def isZero: Boolean = synchronized(byMapTask.isEmpty)

  override def copy(): SummariesByMapTask = synchronized {
    val copied = new SummariesByMapTask
    copied.byMapTask ++= byMapTask
    copied
  }

  override def reset(): Unit = synchronized(byMapTask.clear())

  override def add(summaries: (Int, Map[Int, SplitSummary])): Unit =
    synchronized(byMapTask += summaries)

  override def merge(
      other: AccumulatorV2[(Int, Map[Int, SplitSummary]), Map[Int, Map[Int, SplitSummary]]]): Unit =
    synchronized(byMapTask ++= other.value)

  override def value: Map[Int, Map[Int, SplitSummary]] = synchronized(byMapTask.toMap)

  /** Each of `splits` splits' summary: every map task's merged, in map task order. */
  def summaries(splits: Int, functions: SplitWindowFunctions): IndexedSeq[SplitSummary] = {
    val byTask = value.toSeq.sortBy(_._1).map(_._2)
    (0 until splits).map(i => functions.merge(byTask.flatMap(_.get(i))))
  }
}

/**
 * The summaries of window `functions`' splits made as the routing map tasks route their rows, as
 * the hot-key steps take them: gathered in `accumulator`; a map task's summarizers share one
 * [[SplitWindowFunctions.Summarizers]].
 */
final class WindowSummariesWhileRouting(
    accumulator: SummariesByMapTask,
    functions: SplitWindowFunctions)
    extends SummariesWhileRouting[SplitSummary] {

  override def summarizers(): () => SplitSummarizer[SplitSummary] = {
    val shared = new functions.Summarizers
    () => shared.newSplit()
  }

  override def add(mapTask: Int, bySplit: Map[Int, SplitSummary]): Unit =
    accumulator.add(mapTask -> bySplit)

  override def summaries(numSplits: Int): IndexedSeq[SplitSummary] =
    accumulator.summaries(numSplits, functions)
}
