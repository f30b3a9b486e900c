package org.apache.spark.sql.skewagg.window

import org.apache.spark.ShuffleDependency
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Ascending, Murmur3Hash, SortOrder, UnsafeProjection, UnsafeRow
}
import org.apache.spark.sql.execution.{CoalescedPartitionSpec, ShufflePartitionSpec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.ShufflePartitionsUtil
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.skewagg.{
  AveragedBlockSizes, SkewAggConf, SkewAggDecisions, SkewedPartitions
}
import org.apache.spark.sql.skewagg.SkewAggDecision.AtRunTime
import org.apache.spark.sql.skewagg.hotkey.{ExternalSorts, HotKeyRanges, HotKeySplitPipeline}

/**
 * The run of `plan`, a [[HotKeySplitWindowExec]] (its `doExecute`), on the hot-key pipeline
 * ([[HotKeySplitPipeline]]): the skewed partitions of the window's shuffle read in map-output
 * pieces and sampled; the other keys of those partitions by hash to Spark's sorts and windows;
 * each window's splits summarized as [[SplitSummary]]s (by the routing map tasks,
 * [[RoutedWindowSummaries]], or one job over the splits), folded per hot key into the splits'
 * seeds ([[SplitWindowFunctions.seeds]]), then evaluated, window by window up the chain. It
 * records what it found and did on the plan ([[SkewAggDecision.AtRunTime]]).
 *
 * Rule: driver only, and never captured: its closures capture values copied into local vals
 * (split functions, orders, metrics), not this evaluator or its plan.
 */
private[window] final class HotKeySplitWindowEvaluator(
    plan: HotKeySplitWindowExec,
    pipeline: HotKeySplitPipeline) {

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
    plan.splitFunctions.left.foreach { reason =>
      return finish(sparkWindow(child).execute(), s"Spark's window: $reason")
    }
    val stats = shuffle.statistics.getOrElse {
      return finish(sparkWindow(child).execute(), "the window's shuffle has no map task")
    }
    val sizes = stats.bytesByPartitionId
    val specs = shuffle.specs(sizes)
    val skew = HotKeySplitWindowExec.skewOf(sizes, plan.forced, conf)
    val skewedIds = skew.skewed.map(_._1).toSet
    def reducers(spec: ShufflePartitionSpec): Range = spec match {
      case CoalescedPartitionSpec(start, end, _) => start until end
      case _ => Range(0, 0) // (read in pieces by another rule already: left as read)
    }
    val (skewedSpecs, ordinarySpecs) = specs.partition(reducers(_).exists(skewedIds))
    if (skewedSpecs.isEmpty) {
      val unseen = AveragedBlockSizes.measured(sizes.length, conf)
        .map(a => s" (skew unseen: ${a.text(conf.getConf(SkewAggConf.SKEW_FACTOR))})")
      return finish(
        sparkWindow(child).execute(),
        "no partition of the window's shuffle skewed when it ran: Spark's window" +
          unseen.getOrElse(""))
    }
    plan.longMetric("skewedPartitions").set(skew.skewed.size.toLong)
    val target = SkewedPartitions.splitSize(sizes, skew, conf)
    val pieceSpecs: Seq[ShufflePartitionSpec] = skewedSpecs.flatMap(reducers).flatMap { i =>
      val whole = Seq(CoalescedPartitionSpec(i, i + 1, sizes(i)))
      if (!skewedIds(i)) whole
      else ShufflePartitionsUtil.createSkewPartitionSpecs(stats.shuffleId, i, target)
        .getOrElse(whole)
    }
    val pieces = inputReading(pieceSpecs).execute()
    val minKeyRows = conf.getConf(SkewAggConf.WINDOW_SPLIT_MIN_KEY_ROWS)
    // Without PARTITION BY the one key is the whole partition: split into pieces of the target
    // size, not only at its map outputs' bounds (a few map tasks can write the whole table). The
    // bounds are sampled from at least as many map outputs as there may be ranges: the order is
    // often that of the input's files, each map output a run of it, and bounds from a few runs
    // would leave the rest of a key's order in one range.
    val global = plan.partitionSpec.isEmpty
    val slices =
      if (!global) pieceSpecs.size
      else math.max(pieceSpecs.size, math.ceil(skew.skewed.map(_._2).sum.toDouble / target).toInt)
    val (sampleSpecs, sampleWeights) = SampledMapOutputs.of(
      stats.shuffleId,
      skew.skewed.map(_._1).filter(i => skewedSpecs.exists(reducers(_).contains(i))),
      conf.getConf(SkewAggConf.WINDOW_SPLIT_SAMPLE_FRACTION),
      atLeast = math.min(slices, conf.getConf(SkewAggConf.WINDOW_SPLIT_MAX_SPLITS))).unzip
    val sampled = HotKeyRanges.sample(
      inputReading(sampleSpecs).execute(),
      plan.partitionSpec,
      windows.indices.map(routingOrder),
      child.output,
      hashPartitions = slices,
      minKeyRows,
      conf.getConf(SkewAggConf.WINDOW_SPLIT_MAX_SPLITS),
      conf.getConf(SkewAggConf.WINDOW_SPLIT_SAMPLE_SIZE),
      sampleFraction = 1.0,
      slots = 1,
      factor = 0.0, // (the partitions are skewed: skewagg's per-slot test was made on them)
      partitionWeights = Some(sampleWeights.toIndexedSeq))
    // The other keys of the skewed partitions by hash into as many tasks as their estimated rows
    // fill, pieces of the sample's average (at least one, at most one per piece).
    val ordinaryTasks = math.min(
      pieceSpecs.size,
      math.max(1, math.ceil(sampled.head.ordinaryRows / sampled.head.averagePartitionRows).toInt))
    val routings = sampled.head.withHashPartitions(ordinaryTasks) +: sampled.tail
    val inPlace = plan.inPlace
    val ranges = if (inPlace) routings.map(_.unsplit) else routings
    val tasks = if (inPlace) pieceSpecs.size else ranges.head.numSplits
    val split = ranges.head.describe(
      if (inPlace) "map-output piece (no order)" else "order",
      minKeyRows,
      SkewAggConf.WINDOW_SPLIT_MIN_KEY_ROWS.key,
      tasks,
      wholePartition = global)
    val chained = ranges.tail.filter(_.hotKeys.nonEmpty)
      .map(r => s", then by the next window's order into ${r.numSplits} tasks")
    val others =
      if (ranges.head.hotKeys.isEmpty || global) ""
      else s"; the other keys of those partitions into $ordinaryTasks task(s)"
    val found = HotKeySplitWindowExec.describe(skew, plan.forced, global)
    val skewed = s"$found, read in ${pieceSpecs.size} pieces; $split${chained.mkString}$others"
    if (ranges.head.hotKeys.isEmpty) return finish(sparkWindow(child).execute(), skewed)

    pipeline.metrics.recordSplit(ranges.head.hotKeys.size, tasks)
    val routed = routedSummaries(0, pieceSpecs.size, ranges.head.numSplits)
    val dependency = route(pieces, ranges.head, 0, routed, routesHotKeys = !inPlace)
    val rest = sparkWindow(
      RowsScanExec(
        child.output,
        pipeline.readPartitions(dependency, 0 until ranges.head.hashPartitions)))
    val (hot, unsplit) = hotKeyResults(ranges, dependency, routed, pieceSpecs)
    val parts =
      Seq(rest.execute(), hot) ++
        (if (ordinarySpecs.isEmpty) Nil
         else Seq(sparkWindow(inputReading(ordinarySpecs)).execute()))
    finish(pipeline.union(parts), skewed + unsplit.fold("")("; " + _))
  }

  private def finish(result: RDD[InternalRow], decision: String): RDD[InternalRow] = {
    SkewAggDecisions.note(plan, AtRunTime(HotKeySplitWindowExec.Step, decision))
    pipeline.postDriverMetrics(Seq(plan.longMetric("skewedPartitions")))
    result
  }

  /**
   * Where window `i`'s summaries are made: by the `mapTasks` routing map tasks as they route the
   * rows into `splits` splits, when they read no order and the edge rows each keeps for lag and
   * lead (per split it routes to) stay few on the driver (None: one job over the splits, in
   * order, which keeps one split's edge rows each).
   */
  private def routedSummaries(i: Int, mapTasks: Int, splits: Int): Option[RoutedWindowSummaries] =
    if (levels(i).summarizesInOrder ||
      levels(i).edgeRows.toLong * mapTasks * splits > HotKeySplitWindowEvaluator.MaxRoutedEdgeRows)
      None
    else Some(new RoutedWindowSummaries(pipeline.registered(new RoutedSummaries), levels(i)))

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
      routed: Option[RoutedWindowSummaries],
      routesHotKeys: Boolean): ShuffleDependency[Int, InternalRow, InternalRow] =
    pipeline.route(
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
      routed: Option[RoutedWindowSummaries],
      pieceSpecs: Seq[ShufflePartitionSpec]): (RDD[InternalRow], Option[String]) = {
    val summaries = summariesOf(0, ranges.head, dependency, routed)
    val first = ranges.head.hashPartitions
    val maxRankedRows = conf.getConf(SkewAggConf.TEST_WINDOW_MAX_RANKED_ROWS)
    // The same keys, in the same order, in every window's ranges.
    def keySummaries(k: Int) = ranges.head.hotKeys(k).partitions.map(p => summaries(p - first))
    val (fitting, tooLarge) = ranges.head.hotKeys.indices.partition { k =>
      levels.forall(_.splits(keySummaries(k).map(_.rows).sum, maxRankedRows))
    }
    val (splitKeys, rangedTooFar) = fitting.partition(k => levels.head.exact(keySummaries(k)))
    val sparksKeys = tooLarge ++ rangedTooFar
    val unsplit = Seq(
      tooLarge -> "too many rows for a ranking function's int",
      rangedTooFar -> ("bounded RANGE frames reaching more than " +
        s"${conf.getConf(SkewAggConf.WINDOW_SPLIT_MAX_RANGE_FRAME_ROWS)} rows across a split's " +
        s"edge (${SkewAggConf.WINDOW_SPLIT_MAX_RANGE_FRAME_ROWS.key}), or bounds that wrap " +
        "around")).collect {
      case (keys, why) if keys.nonEmpty => s"${keys.size} key(s) in Spark's window: $why"
    }
    val note = if (unsplit.isEmpty) None else Some(unsplit.mkString("; "))
    val firstSeeds = seedsOf(0, ranges.head, splitKeys, summaries)
    if (plan.inPlace) { // (no ranking function without an order: every key was split)
      val valuesByKey = new java.util.HashMap[UnsafeRow, InternalRow]()
      ranges.head.hotKeys.foreach(h =>
        valuesByKey.put(h.key, firstSeeds(h.firstPartition - first)._2))
      return (withKeyValues(inputReading(pieceSpecs).execute(), valuesByKey), note)
    }
    val splitRows = plan.longMetric("splitRows")
    var results = evaluated(0, ranges.head, dependency, firstSeeds, counted = Some(splitRows))
    windows.indices.tail.foreach { level =>
      val next = ranges(level)
      val nextRouted = routedSummaries(level, results.getNumPartitions, next.numSplits)
      val nextDependency = route(results, next, level, nextRouted, routesHotKeys = true)
      val seeds =
        seedsOf(level, next, splitKeys, summariesOf(level, next, nextDependency, nextRouted))
      results = evaluated(level, next, nextDependency, seeds, counted = None)
    }
    if (sparksKeys.isEmpty) (results, note)
    else {
      // Each such key's splits read in order by one task, Spark's sorts and windows over them.
      val whole = sparksKeys.sorted.map(ranges.head.hotKeys).map(h =>
        CoalescedPartitionSpec(h.partitions.head, h.partitions.last + 1))
      val keys = pipeline.readSpecs(dependency, whole)
      (pipeline.union(Seq(results, sparkWindow(RowsScanExec(child.output, keys)).execute())), note)
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
      routed: Option[RoutedWindowSummaries]): IndexedSeq[SplitSummary] =
    routed match {
      case Some(byMapTask) => // (made as the map stage runs, which runs first)
        pipeline.routedSummaries(dependency, byMapTask, ranges.numSplits)
      case None =>
        val split = levels(level)
        val sorted = inOrder(level)
        val splits = pipeline.readPartitions(dependency, ranges.splitPartitions)
        pipeline.collected(splits, 0 until ranges.numSplits) { (_, rows) =>
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
    pipeline.seeds(ranges, summaries, splitKeys.map(ranges.hotKeys)) { keySummaries =>
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
    pipeline.readPartitions(dependency, ranges.splitPartitions).mapPartitionsWithIndexInternal {
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

private object HotKeySplitWindowEvaluator {

  /** The most edge rows (for lag and lead) the routing map tasks may send the driver in all. */
  val MaxRoutedEdgeRows: Long = 1L << 20
}
