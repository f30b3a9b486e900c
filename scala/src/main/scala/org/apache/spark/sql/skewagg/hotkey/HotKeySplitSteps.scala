package org.apache.spark.sql.skewagg.hotkey

import scala.concurrent.Future
import scala.concurrent.duration.Duration
import scala.reflect.ClassTag

import org.apache.spark.{ShuffleDependency, SparkContext, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, SortOrder}
import org.apache.spark.sql.execution.{CoalescedPartitionSpec, ShufflePartitionSpec, ShuffledRowRDD}
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.util.{AccumulatorV2, CompletionIterator, ThreadUtils}

/**
 * The driver side of a hot-key split, as the steps an operator's run takes in order, generic in
 * what a feature summarizes of a split (`S`) and seeds each split with (`T`):
 *  1. sample: [[HotKeyRanges.sample]] picks the hot keys and the ranges they are split by;
 *  2. [[route]]: the input shuffled by the ranges' router; its map tasks may also summarize the
 *     rows they route to each split ([[SummariesWhileRouting]]);
 *  3. [[readPartitions]], [[readSpecs]]: partitions of that shuffle, as tasks;
 *  4. the splits' summaries on the driver: one job over the split partitions ([[collected]]), or
 *     what the map tasks summarized ([[routedSummaries]]);
 *  5. [[seeds]]: per hot key, its splits' summaries folded in order into one seed per split;
 *  6. the feature evaluates the splits from their seeds (in their tasks, or in [[oneTask]]), and
 *     [[union]] puts their rows with the other keys'.
 * Its metrics are `metrics` ([[HotKeySplitMetrics]]): the shuffle's size, reads and writes, and
 * the split's numbers, which the caller records and posts ([[postDriverMetrics]]).
 *
 * Rule: the steps stay on the driver. The closures they ship capture its arguments' values,
 * never these steps, and every step is a function of the input (the routing, the summaries and
 * seeds), so a task run again gives what its first run gave.
 */
final class HotKeySplitSteps(sparkContext: SparkContext, val metrics: HotKeySplitMetrics) {

  /**
   * `input` (rows of `inputAttributes`) shuffled to the partitions `ranges.router` gives them by
   * `keys` and `order`. With `summarizing`, each map task also summarizes the rows it routes to
   * each split; without `routesHotKeys`, the hot keys' rows are only summarized (their split
   * partitions stay empty).
   */
  def route[S](
      input: RDD[InternalRow],
      ranges: HotKeyRanges,
      keys: Seq[Expression],
      order: Seq[SortOrder],
      inputAttributes: Seq[Attribute],
      summarizing: Option[SummariesWhileRouting[S]] = None,
      routesHotKeys: Boolean = true): ShuffleDependency[Int, InternalRow, InternalRow] = {
    val first = ranges.hashPartitions
    val withPartitionIds = input.mapPartitionsWithIndexInternal { (mapTask, rows) =>
      val routedRows = RoutingShuffle.routed(
        rows,
        ranges.router(keys, order, inputAttributes),
        ranges.numPartitions)
      summarizing.fold[Iterator[Product2[Int, InternalRow]]](routedRows) { summaries =>
        val newSummarizer = summaries.summarizers()
        val splits = new Array[SplitSummarizer[S]](ranges.numSplits)
        val summarized = routedRows.map { routedRow =>
          val i = routedRow._1 - first
          if (i >= 0) {
            if (splits(i) == null) splits(i) = newSummarizer()
            splits(i).add(routedRow._2)
          }
          routedRow
        }
        CompletionIterator[Product2[Int, InternalRow], Iterator[Product2[Int, InternalRow]]](
          if (routesHotKeys) summarized else summarized.filter(_._1 < first),
          summaries.add(
            mapTask,
            splits.indices.filter(splits(_) != null).map(i => i -> splits(i).result).toMap))
      }
    }
    RoutingShuffle.dependency(
      withPartitionIds,
      ranges.numPartitions,
      inputAttributes.size,
      metrics.dataSize,
      metrics.write)
  }

  /** Partitions `ids` of `dependency`, each read by one task (task i reads `ids(i)`). */
  def readPartitions(
      dependency: ShuffleDependency[Int, InternalRow, InternalRow],
      ids: Range): ShuffledRowRDD =
    readSpecs(dependency, ids.map(i => CoalescedPartitionSpec(i, i + 1)))

  /** `dependency` read by one task per spec of `specs`. */
  def readSpecs(
      dependency: ShuffleDependency[Int, InternalRow, InternalRow],
      specs: Seq[ShufflePartitionSpec]): ShuffledRowRDD =
    new ShuffledRowRDD(dependency, metrics.read, specs.toArray)

  /**
   * One job over `splits`, the split partitions ([[readPartitions]] of `splitPartitions`): for
   * each split of `ids`, `f` of its index among the splits and its rows, returned in `ids`' order.
   */
  def collected[U: ClassTag](splits: RDD[InternalRow], ids: Seq[Int])(
      f: (Int, Iterator[InternalRow]) => U): IndexedSeq[U] =
    sparkContext.runJob(
      splits,
      (context: TaskContext, rows: Iterator[InternalRow]) => f(context.partitionId(), rows),
      ids).toIndexedSeq

  /**
   * The summary of each of `numSplits` splits that the map tasks of `dependency`, routed with
   * `summarizing`, made: the map stage runs first, and reads of the shuffle then find its output.
   */
  def routedSummaries[S](
      dependency: ShuffleDependency[Int, InternalRow, InternalRow],
      summarizing: SummariesWhileRouting[S],
      numSplits: Int): IndexedSeq[S] = {
    HotKeySplitSteps.awaited(sparkContext.submitMapStage(dependency))
    summarizing.summaries(numSplits)
  }

  /**
   * `accumulator`, registered for the routing map tasks to add their summaries to (unnamed: a
   * named accumulator's value goes to every task end event and the UI).
   */
  def registered[A <: AccumulatorV2[_, _]](accumulator: A): A = {
    sparkContext.register(accumulator)
    accumulator
  }

  /**
   * Each split's seed, by split index: `ofKey` folds the `summaries` of each of `keys`' splits,
   * in order, into one seed per split of that key; the splits of other keys of `ranges` stay
   * null.
   */
  def seeds[S, T: ClassTag](
      ranges: HotKeyRanges,
      summaries: IndexedSeq[S],
      keys: Seq[HotKeyRange])(ofKey: IndexedSeq[S] => Seq[T]): Array[T] = {
    val seeds = new Array[T](ranges.numSplits)
    keys.foreach { hot =>
      val splits = hot.partitions.map(_ - ranges.hashPartitions)
      splits.zip(ofKey(splits.map(summaries))).foreach { case (i, seed) => seeds(i) = seed }
    }
    seeds
  }

  /** The rows of `rows`, computed in one task (from values the driver gathered). */
  def oneTask(rows: () => Iterator[InternalRow]): RDD[InternalRow] =
    sparkContext.parallelize(Seq(0), 1).mapPartitionsInternal(_ => rows())

  /** The rows of every one of `parts`: the splits' results and the other keys'. */
  def union(parts: Seq[RDD[InternalRow]]): RDD[InternalRow] = sparkContext.union(parts)

  /** Posts the operator's `others` and the split's numbers, all set on the driver. */
  def postDriverMetrics(others: Seq[SQLMetric]): Unit =
    metrics.postDriverUpdates(sparkContext, others)
}

object HotKeySplitSteps {

  /** The map stage's result once it has run; a failed stage throws its error as a job's would. */
  def awaited[T](mapStage: Future[T]): T = {
    ThreadUtils.awaitReady(mapStage, Duration.Inf)
    mapStage.value.get.get
  }
}
