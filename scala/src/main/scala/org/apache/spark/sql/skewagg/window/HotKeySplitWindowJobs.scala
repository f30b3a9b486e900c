package org.apache.spark.sql.skewagg.window

import org.apache.spark.ShuffleDependency
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Ascending, Murmur3Hash, SortOrder, UnsafeProjection, UnsafeRow
}
import org.apache.spark.sql.execution.{CoalescedPartitionSpec, ShufflePartitionSpec, SparkPlan}
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.skewagg.{AveragedBlockSizes, SkewAggConf, RecordedDecisions}
import org.apache.spark.sql.skewagg.SkewAggDecision.AtRunTime
import org.apache.spark.sql.skewagg.hotkey.{ExternalSorts, HotKeyRanges, HotKeySplitSteps}

/**
 * The run of `plan`, a [[HotKeySplitWindowExec]] (its `doExecute`), with the hot-key steps
 * ([[HotKeySplitSteps]]). What to do is [[WindowSplitPlan]]'s, a value computed from what
 * the run measures; the run only makes the jobs it asks for and follows it: the skewed
 * partitions of the window's shuffle read in map-output pieces and sampled; the other keys of
 * those partitions by hash to Spark's sorts and windows; each window's splits summarized as
 * [[SplitSummary]]s (by the routing map tasks, [[WindowSummariesWhileRouting]], or one job over the
 * splits), folded per hot key into the splits' seeds ([[SplitWindowFunctions.seeds]]), then
 * evaluated, window by window up the chain. It records the plan's description, or its reason
 * for Spark's window, on the plan ([[SkewAggDecision.AtRunTime]]).
 *
 * Rule: driver only, and never captured: its closures capture values copied into local vals
 * (split functions, orders, metrics), not these jobs or their plan.
 */
private[window] final class HotKeySplitWindowJobs(
    plan: HotKeySplitWindowExec,
    steps: HotKeySplitSteps) {

  private val child = plan.child
  private val windows = plan.windows
  private def conf = plan.conf

  /** Each window's split functions (found by the plan before the run reads them). */
  private def levels: IndexedSeq[SplitWindowFunctions] = plan.levels

  /** The window's shuffle below its input. */
  private lazy val shuffle = WindowShuffle.below(child)

  /** The input, reading the shuffle's `specs` only. */
  private def inputReading(specs: Seq[ShufflePartitionSpec]): SparkPlan =
    shuffle.reading(child, specs)

  /** Spark's own sorts and windows over `input`. */
  private def sparkWindow(input: SparkPlan): SparkPlan =
    ChainedWindow.sparkPlan(windows, plan.partitionSpec, input)

  def execute(): RDD[InternalRow] = {
    val decided = for {
      _ <- plan.splitFunctions.left.map(reason => s"Spark's window: $reason")
      sizes <- shuffle.sizes.toRight("the window's shuffle has no map task")
      settings = settingsOf(sizes)
      _ = plan.longMetric("skewedPartitions").set(WindowSplitPlan.skew(sizes, settings).skewed.size)
      pieces <- WindowSplitPlan.pieces(sizes, shuffle.specs(sizes.byReducer), settings)
      split <- WindowSplitPlan.split(pieces, sampled(pieces), settings)
    } yield split
    decided match {
      case Left(reason) => finish(sparkWindow(child).execute(), reason, leftAlone = true)
      case Right(split) =>
        val (result, unsplit) = run(split)
        finish(result, split.description + unsplit.fold("")("; " + _), leftAlone = false)
    }
  }

  /** What the split reads besides the sizes ([[WindowSplitSettings]]). */
  private def settingsOf(sizes: WindowShuffleSizes): WindowSplitSettings = {
    val partitions = sizes.byReducer.length
    WindowSplitSettings(
      conf,
      HotKeySplitWindowExec.slotsFor(partitions, conf),
      plan.forced,
      global = plan.partitionSpec.isEmpty,
      plan.inPlace,
      AveragedBlockSizes.measured(partitions, conf))
  }

  /** The sample's routings, one per window: one job over `pieces.sample`. */
  private def sampled(pieces: WindowPieces): Seq[HotKeyRanges] = {
    val (specs, weights) = pieces.sample.unzip
    HotKeyRanges.sample(
      inputReading(specs).execute(),
      plan.partitionSpec,
      windows.indices.map(routingOrder),
      child.output,
      hashPartitions = pieces.slices,
      conf.getConf(SkewAggConf.WINDOW_SPLIT_MIN_KEY_ROWS),
      conf.getConf(SkewAggConf.WINDOW_SPLIT_MAX_SPLITS),
      conf.getConf(SkewAggConf.WINDOW_SPLIT_SAMPLE_SIZE),
      sampleFraction = 1.0,
      slots = 1,
      factor = 0.0, // (the partitions are skewed: skewagg's per-slot test was made on them)
      partitionWeights = Some(weights.toIndexedSeq))
  }

  /**
   * `split` run: the pieces routed, the other keys of the skewed partitions through Spark's
   * window, the hot keys' splits ([[hotKeyResults]]) and the partitions that are not skewed as
   * before; with the note of the keys left to Spark's window.
   */
  private def run(split: WindowSplit): (RDD[InternalRow], Option[String]) = {
    val pieces = split.pieces
    val ranges = split.routings
    steps.metrics.recordSplit(ranges.head.hotKeys.size, split.tasks)
    val routed = routedSummaries(0, pieces.pieces.size, ranges.head.numSplits)
    val dependency = route(
      inputReading(pieces.pieces).execute(),
      ranges.head,
      0,
      routed,
      routesHotKeys = !plan.inPlace)
    val rest = sparkWindow(
      RowsScanExec(
        child.output,
        steps.readPartitions(dependency, 0 until ranges.head.hashPartitions)))
    val (hot, unsplit) = hotKeyResults(ranges, dependency, routed, pieces.pieces)
    val parts =
      Seq(rest.execute(), hot) ++
        (if (pieces.ordinary.isEmpty) Nil
         else Seq(sparkWindow(inputReading(pieces.ordinary)).execute()))
    (steps.union(parts), unsplit)
  }

  private def finish(
      result: RDD[InternalRow],
      decision: String,
      leftAlone: Boolean): RDD[InternalRow] = {
    RecordedDecisions.note(plan, AtRunTime(HotKeySplitWindowExec.Step, decision, leftAlone))
    steps.postDriverMetrics(Seq(plan.longMetric("skewedPartitions")))
    result
  }

  /**
   * Where window `i`'s summaries are made: by the `mapTasks` routing map tasks as they route the
   * rows into `splits` splits, when they read no order and the edge rows each keeps for lag and
   * lead (per split it routes to) stay few on the driver (None: one job over the splits, in
   * order, which keeps one split's edge rows each).
   */
  private def routedSummaries(
      i: Int,
      mapTasks: Int,
      splits: Int): Option[WindowSummariesWhileRouting] =
    if (levels(i).summarizesInOrder ||
      levels(i).edgeRows.toLong * mapTasks * splits > HotKeySplitWindowJobs.MaxRoutedEdgeRows)
      None
    else Some(new WindowSummariesWhileRouting(steps.registered(new SummariesByMapTask), levels(i)))

  /**
   * What the hot keys' rows are split by for window `i`: its order (of the child's columns), or
   * without one (every function then reads the whole partition, in no order) a hash of the
   * child's columns that Spark can hash (not maps or variants: Spark refuses to hash them).
   */
  private def routingOrder(i: Int): Seq[SortOrder] =
    if (windows(i).orderSpec.nonEmpty) windows(i).orderSpec
    else {
      val hashable =
        child.output.filter(a => new Murmur3Hash(Seq(a)).checkInputDataTypes().isSuccess)
      Seq(SortOrder(new Murmur3Hash(hashable), Ascending))
    }

  /**
   * The rows of window `level`'s input routed by `ranges` on the partition keys and
   * [[routingOrder]]; with `routed`, each map task also summarizes the rows it routes to each
   * split. Without `routesHotKeys`, the hot keys' rows are only summarized.
   */
  private def route(
      input: RDD[InternalRow],
      ranges: HotKeyRanges,
      level: Int,
      routed: Option[WindowSummariesWhileRouting],
      routesHotKeys: Boolean): ShuffleDependency[Int, InternalRow, InternalRow] =
    steps.route(
      input,
      ranges,
      plan.partitionSpec,
      routingOrder(level),
      plan.inputOf(level),
      routed,
      routesHotKeys)

  /**
   * The hot keys' splits, window by window: summarized (by the routing map tasks, or one job
   * when summaries read in order), seeded on the driver, then computed; each window's results
   * are routed by the next window's order. A key too large for a ranking function's int, or
   * whose bounded RANGE frames reach too far across its splits' edges, runs Spark's windows in
   * one task (said in the note returned). In place ([[HotKeySplitWindowExec.inPlace]]), the
   * pieces are read again instead.
   */
  private def hotKeyResults(
      ranges: Seq[HotKeyRanges],
      dependency: ShuffleDependency[Int, InternalRow, InternalRow],
      routed: Option[WindowSummariesWhileRouting],
      pieceSpecs: Seq[ShufflePartitionSpec]): (RDD[InternalRow], Option[String]) = {
    val summaries = summariesOf(0, ranges.head, dependency, routed)
    val first = ranges.head.hashPartitions
    val maxRankedRows = conf.getConf(SkewAggConf.TEST_WINDOW_MAX_RANKED_ROWS)
    // The same keys, in the same order, in every window's ranges.
    def keySummaries(k: Int) = ranges.head.hotKeys(k).partitions.map(p => summaries(p - first))
    val keys = ranges.head.hotKeys.indices
    val SplitKeys(splitKeys, sparksKeys, note) = WindowSplitPlan.splitKeys(
      keys.map(k => levels.forall(_.splits(keySummaries(k).map(_.rows).sum, maxRankedRows))),
      keys.map(k => levels.head.exact(keySummaries(k))),
      conf)
    val firstSeeds = seedsOf(0, ranges.head, splitKeys, summaries)
    if (plan.inPlace) { // (no ranking function without an order: every key was split)
      val valuesByKey = new java.util.HashMap[UnsafeRow, InternalRow]()
      ranges.head.hotKeys.foreach(h =>
        valuesByKey.put(h.key, firstSeeds(h.firstPartition - first)._2))
      (withKeyValues(inputReading(pieceSpecs).execute(), valuesByKey), note)
    } else {
      val results = chainEvaluated(ranges, dependency, splitKeys, firstSeeds)
      if (sparksKeys.isEmpty) (results, note)
      else {
        // Each such key's splits read in order by one task, Spark's sorts and windows over them.
        val whole = sparksKeys.sorted.map(ranges.head.hotKeys).map(h =>
          CoalescedPartitionSpec(h.partitions.head, h.partitions.last + 1))
        val keys = steps.readSpecs(dependency, whole)
        (steps.union(Seq(results, sparkWindow(RowsScanExec(child.output, keys)).execute())), note)
      }
    }
  }

  /**
   * The `splitKeys` of the first window evaluated from `firstSeeds`, then each window of the
   * chain over the results of the one below, routed by its order, summarized and seeded.
   */
  private def chainEvaluated(
      ranges: Seq[HotKeyRanges],
      dependency: ShuffleDependency[Int, InternalRow, InternalRow],
      splitKeys: Seq[Int],
      firstSeeds: Array[(SplitSeed, InternalRow)]): RDD[InternalRow] = {
    val splitRows = plan.longMetric("splitRows")
    val first = evaluated(0, ranges.head, dependency, firstSeeds, counted = Some(splitRows))
    windows.indices.tail.foldLeft(first) { (results, level) =>
      val next = ranges(level)
      val nextRouted = routedSummaries(level, results.getNumPartitions, next.numSplits)
      val nextDependency = route(results, next, level, nextRouted, routesHotKeys = true)
      val seeds =
        seedsOf(level, next, splitKeys, summariesOf(level, next, nextDependency, nextRouted))
      evaluated(level, next, nextDependency, seeds, counted = None)
    }
  }

  /** Window `level`'s rows of each split of `dependency` in the order it reads them. */
  private def inOrder(level: Int): Iterator[InternalRow] => Iterator[InternalRow] = {
    // A split holds one key: sorted by the rest of the order (peers stay consecutive). When its
    // rows are read again (a summary job reads them in order, or the next window of the chain
    // reads their results) or its edge rows were picked by the routing map tasks (lag, lead),
    // ties by the rows' bytes, so that every pass and every task attempt reads one order;
    // otherwise as Spark's sort (ties as they arrive, a radix sort when it can).
    val order = plan.readOrder(level)
    val input = plan.inputOf(level)
    val sortSpill = plan.longMetric("sortSpillSize")
    val readAgain = levels(level).evaluatesInTotalOrder || level < windows.size - 1
    if (order.isEmpty) identity
    else if (readAgain) ExternalSorts.sortTotally(_, order, input, sortSpill)
    else ExternalSorts.sortBy(_, order, input, sortSpill)
  }

  /** Window `level`'s summary of each split of `ranges`. */
  private def summariesOf(
      level: Int,
      ranges: HotKeyRanges,
      dependency: ShuffleDependency[Int, InternalRow, InternalRow],
      routed: Option[WindowSummariesWhileRouting]): IndexedSeq[SplitSummary] =
    routed match {
      case Some(byMapTask) => // (made as the map stage runs, which runs first)
        steps.routedSummaries(dependency, byMapTask, ranges.numSplits)
      case None =>
        val split = levels(level)
        val sorted = inOrder(level)
        val splits = steps.readPartitions(dependency, ranges.splitPartitions)
        steps.collected(splits, 0 until ranges.numSplits) { (_, rows) =>
          split.summarize(sorted(rows))
        }
    }

  /**
   * Per split of `ranges`, window `level`'s seed and its key's whole-partition values, for the
   * hot keys `splitKeys` (by index; the other splits' are null).
   */
  private def seedsOf(
      level: Int,
      ranges: HotKeyRanges,
      splitKeys: Seq[Int],
      summaries: IndexedSeq[SplitSummary]): Array[(SplitSeed, InternalRow)] = {
    val split = levels(level)
    steps.seeds(ranges, summaries, splitKeys.map(ranges.hotKeys)) { keySummaries =>
      val (keySeeds, values) = split.seeds(keySummaries)
      keySeeds.map((_, values))
    }
  }

  /** Window `level`'s rows with their results, from each split's seed (`counted` counts them). */
  private def evaluated(
      level: Int,
      ranges: HotKeyRanges,
      dependency: ShuffleDependency[Int, InternalRow, InternalRow],
      seeds: Array[(SplitSeed, InternalRow)],
      counted: Option[SQLMetric]): RDD[InternalRow] = {
    val split = levels(level)
    val sorted = inOrder(level)
    val peerBuffer = PeerBuffer(
      conf.windowExecBufferInMemoryThreshold,
      conf.windowExecBufferSpillThreshold)
    steps.readPartitions(dependency, ranges.splitPartitions).mapPartitionsWithIndexInternal {
      (i, rows) =>
        if (seeds(i) == null) Iterator.empty // (a key left to Spark's windows)
        else {
          val input = counted.fold(rows)(metric => rows.map { row => metric += 1; row })
          split.evaluate(sorted(input), seeds(i)._1, seeds(i)._2, peerBuffer)
        }
    }
  }

  /** In place: the hot keys' rows of `pieces`, each with its key's values. */
  private def withKeyValues(
      pieces: RDD[InternalRow],
      valuesByKey: java.util.HashMap[UnsafeRow, InternalRow]): RDD[InternalRow] = {
    val split = levels.head
    val keys = plan.partitionSpec
    val input = child.output
    val splitRows = plan.longMetric("splitRows")
    pieces.mapPartitionsInternal { rows =>
      val keyOf = UnsafeProjection.create(keys, input)
      val withValues = split.withWholeValues()
      rows.flatMap { row =>
        val values = valuesByKey.get(keyOf(row))
        if (values == null) Iterator.empty
        else {
          splitRows += 1
          Iterator.single(withValues(row, values))
        }
      }
    }
  }
}

private object HotKeySplitWindowJobs {

  /** The most edge rows (for lag and lead) the routing map tasks may send the driver in all. */
  val MaxRoutedEdgeRows: Long = 1L << 20
}
