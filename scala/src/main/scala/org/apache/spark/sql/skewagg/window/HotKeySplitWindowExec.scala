package org.apache.spark.sql.skewagg.window

import org.apache.spark.{ShuffleDependency, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Ascending, Attribute, Expression, Murmur3Hash, NamedExpression, SortOrder, UnsafeProjection,
  UnsafeRow
}
import org.apache.spark.sql.catalyst.plans.physical.{Partitioning, UnknownPartitioning}
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.catalyst.util.truncatedString
import org.apache.spark.sql.execution.{
  CoalescedPartitionSpec, ShufflePartitionSpec, ShuffledRowRDD, SortExec, SparkPlan, SQLExecution,
  UnaryExecNode
}
import org.apache.spark.sql.execution.adaptive.ShufflePartitionsUtil
import org.apache.spark.sql.execution.metric.{
  SQLMetric, SQLMetrics, SQLShuffleReadMetricsReporter, SQLShuffleWriteMetricsReporter
}
import org.apache.spark.sql.execution.window.WindowExec
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  SkewAggConf, SkewAggHints, SkewAggLocalStageExec, SkewAggWindowExec, SkewedPartitions
}
import org.apache.spark.sql.skewagg.hotkey.{ExternalSorts, HotKeyRanges, RoutingShuffle}
import org.apache.spark.util.CompletionIterator

/**
 * Spark's window (`WindowExec` over its sort), or a chain of windows on the same keys, whose hot
 * keys are split by ranges of each window's order across several tasks.
 *
 * Plan shape: planned by [[SplitSkewedWindow]] in place of `WindowExec ← SortExec` (a chain:
 * more windows on the same keys above, each over its sort or directly over the one below) when
 * the window's shuffle (a materialized query stage, maybe read coalesced) has skewed partitions
 * and every window function can be split ([[WindowSplitSupport]]); without adaptive execution,
 * over the exchange Spark planned, whose map stage it runs first ([[WindowShuffle]]). `child` is
 * the window's input: the shuffle, or rows computed from it by Project / Filter; the chain's
 * windows, bottom first ([[windows]]), are `windowExpressions`, `orderSpecs` and `sorts` (the
 * sort Spark placed for each: its keys and order, or more that a window above it needs; kept
 * as expression fields, which Spark's plan methods read and rewrite); `forced` (the SKEW_AGG
 * hint) reads every partition as skewed.
 *
 * Execution (every decision is a function of the input, so task retries are safe):
 *  1. Partitions that are not skewed run Spark's own sort and window, as before.
 *  2. The skewed ones are read in map-output pieces (as Spark's skew join reads them); one job
 *     samples a part of their map outputs ([[SampledMapOutputs]], [[HotKeyRanges.sample]]): hot
 *     keys, and bounds of their order values. Without a hot key, they run Spark's sort and
 *     window too.
 *  3. One shuffle of the pieces: the other keys by hash to as many partitions as their rows fill
 *     (the sample's estimate, in pieces; Spark's sort and window again), each hot key by order
 *     range to its own split partitions, so peers (equal order values) meet in one split and the
 *     splits hold the key in order.
 *  4. Each split is summarized (rows, peer groups, partial aggregates): by the map tasks of that
 *     shuffle as they route its rows ([[RoutedSummaries]]), or, when a summary reads the rows in
 *     order, by one job over the splits. The driver folds the summaries into each split's seed
 *     and the key's whole-partition values ([[SplitWindowFunctions]]); each split then sorts its
 *     rows and computes their results.
 *
 * A chain: the hot keys' rows, with the results of the windows below, are routed again by
 * ranges of the next window's order (bounds from the same sample: the windows order by the
 * input's columns), summarized, seeded and computed the same way; the other keys run Spark's
 * chain of sorts and windows. A key is split through the whole chain or not at all.
 *
 * Without an order (one window, every frame the key's whole partition), a hot key's rows are not
 * shuffled: the map tasks only summarize them, and the pieces are read again to give each of
 * them its key's values.
 *
 * Output: partitioned by nothing Spark knows (hot keys span several partitions), each partition
 * in the top window's sort order, as Spark's window's is (without an order, in no order).
 * Metrics: skewed partitions, hot keys split, splits (of the first window), rows in splits,
 * sort spill.
 */
case class HotKeySplitWindowExec(
    windowExpressions: Seq[Seq[NamedExpression]],
    orderSpecs: Seq[Seq[SortOrder]],
    sorts: Seq[Option[Seq[SortOrder]]],
    partitionSpec: Seq[Expression],
    forced: Boolean,
    child: SparkPlan)
    extends UnaryExecNode with SkewAggWindowExec {

  /** The chain's windows, bottom first. */
  def windows: Seq[ChainedWindow] = windowExpressions.indices.map { i =>
    ChainedWindow(windowExpressions(i), orderSpecs(i), sorts(i))
  }

  override def output: Seq[Attribute] = inputOf(windows.size)

  /** The input of window `i` of the chain: the child's rows with the results of those below. */
  private def inputOf(i: Int): Seq[Attribute] =
    child.output ++ windows.take(i).flatMap(_.windowExpression.map(_.toAttribute))

  override def outputPartitioning: Partitioning = UnknownPartitioning(0)

  private def sortOrders: Seq[Seq[SortOrder]] = ChainedWindow.sortOrders(windows)

  // (Read in place, the rows of several hot keys of a piece are in no order.)
  override def outputOrdering: Seq[SortOrder] = if (inPlace) Nil else sortOrders.last

  private lazy val readMetrics =
    SQLShuffleReadMetricsReporter.createShuffleReadMetrics(sparkContext)
  private lazy val writeMetrics =
    SQLShuffleWriteMetricsReporter.createShuffleWriteMetrics(sparkContext)

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "skewedPartitions" -> SQLMetrics.createMetric(sparkContext, "number of skewed partitions"),
    "hotKeys" -> SQLMetrics.createMetric(sparkContext, "number of hot keys split"),
    "splits" -> SQLMetrics.createMetric(sparkContext, "number of splits"),
    "splitRows" -> SQLMetrics.createMetric(sparkContext, "rows in splits"),
    "sortSpillSize" -> SQLMetrics.createSizeMetric(sparkContext, "split sort spill size"),
    "dataSize" -> SQLMetrics.createSizeMetric(sparkContext, "data size")) ++
    readMetrics ++ writeMetrics

  override def nodeName: String = "HotKeySplitWindow"

  override def decision: String = getTagValue(HotKeySplitWindowExec.Split)
    .getOrElse("hot keys of skewed window partitions split by order (not run yet)")

  override def simpleString(maxFields: Int): String = {
    val keys = truncatedString(partitionSpec, "[", ", ", "]", maxFields)
    val chain = windows.map { w =>
      val functions = truncatedString(w.windowExpression, "[", ", ", "]", maxFields)
      s"$functions, $keys, ${truncatedString(w.orderSpec, "[", ", ", "]", maxFields)}"
    }
    s"HotKeySplitWindow ${chain.mkString(" then ")}, hotKeys=splitByOrder"
  }

  /**
   * Each window's split functions, bound to its input; or why one is not split with the settings
   * the query runs with (planned with others: a DataFrame run again after `spark.conf.set`).
   */
  @transient private lazy val splitFunctions: Either[String, IndexedSeq[SplitWindowFunctions]] = {
    val split = windows.indices.map { i =>
      val w = windows(i)
      WindowSplitSupport.functions(w.windowExpression, w.orderSpec, windows.size > 1, conf)
        .map(new SplitWindowFunctions(_, w.windowExpression, w.orderSpec, inputOf(i)))
    }
    split.collectFirst { case Left(reason) => reason }.toLeft(split.collect { case Right(f) => f })
  }

  /** [[splitFunctions]], read once [[doExecute]] has found them. */
  @transient private lazy val levels: IndexedSeq[SplitWindowFunctions] =
    splitFunctions.getOrElse(IndexedSeq.empty)

  /** The window's shuffle below its input. */
  @transient private lazy val shuffle = WindowShuffle.below(child)

  /** The input, reading the shuffle's `specs` only. */
  private def inputReading(specs: Seq[ShufflePartitionSpec]): SparkPlan =
    shuffle.reading(child, specs)

  /** Spark's own sorts and windows over `input`. */
  private def sparkWindow(input: SparkPlan): SparkPlan =
    ChainedWindow.sparkPlan(windows, partitionSpec, input)

  override protected def doExecute(): RDD[InternalRow] = {
    splitFunctions.left.foreach { reason =>
      return finish(sparkWindow(child).execute(), s"Spark's window: $reason")
    }
    val stats = shuffle.statistics.getOrElse {
      return finish(sparkWindow(child).execute(), "the window's shuffle has no map task")
    }
    val sizes = stats.bytesByPartitionId
    val specs = shuffle.specs(sizes)
    val skew = HotKeySplitWindowExec.skewOf(sizes, forced, conf)
    val skewedIds = skew.skewed.map(_._1).toSet
    def reducers(spec: ShufflePartitionSpec): Range = spec match {
      case CoalescedPartitionSpec(start, end, _) => start until end
      case _ => Range(0, 0) // (read in pieces by another rule already: left as read)
    }
    val (skewedSpecs, ordinarySpecs) = specs.partition(reducers(_).exists(skewedIds))
    if (skewedSpecs.isEmpty) {
      return finish(
        sparkWindow(child).execute(),
        "no partition of the window's shuffle " +
          "skewed when it ran: Spark's window")
    }
    longMetric("skewedPartitions").set(skew.skewed.size.toLong)
    val target = SkewedPartitions.splitSize(sizes, skew, conf)
    val pieceSpecs: Seq[ShufflePartitionSpec] = skewedSpecs.flatMap(reducers).flatMap { i =>
      val whole = Seq(CoalescedPartitionSpec(i, i + 1, sizes(i)))
      if (!skewedIds(i)) whole
      else ShufflePartitionsUtil.createSkewPartitionSpecs(stats.shuffleId, i, target)
        .getOrElse(whole)
    }
    val pieces = inputReading(pieceSpecs).execute()
    val minKeyRows = conf.getConf(SkewAggConf.WINDOW_SPLIT_MIN_KEY_ROWS)
    val (sampleSpecs, sampleWeights) = SampledMapOutputs.of(
      stats.shuffleId,
      skew.skewed.map(_._1).filter(i => skewedSpecs.exists(reducers(_).contains(i))),
      conf.getConf(SkewAggConf.WINDOW_SPLIT_SAMPLE_FRACTION)).unzip
    val sampled = HotKeyRanges.sample(
      inputReading(sampleSpecs).execute(),
      partitionSpec,
      windows.indices.map(routingOrder),
      child.output,
      hashPartitions = pieceSpecs.size,
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
    val ranges = if (inPlace) routings.map(_.unsplit) else routings
    val tasks = if (inPlace) pieceSpecs.size else ranges.head.numSplits
    val split = ranges.head.describe(
      if (inPlace) "map-output piece (no order)" else "order",
      minKeyRows,
      SkewAggConf.WINDOW_SPLIT_MIN_KEY_ROWS.key,
      tasks)
    val chained = ranges.tail.filter(_.hotKeys.nonEmpty)
      .map(r => s", then by the next window's order into ${r.numSplits} tasks")
    val others =
      if (ranges.head.hotKeys.isEmpty) ""
      else s"; the other keys of those partitions into $ordinaryTasks task(s)"
    val skewed = s"${HotKeySplitWindowExec.describe(skew, forced)}, read in ${pieceSpecs.size} " +
      s"pieces; $split${chained.mkString}$others"
    if (ranges.head.hotKeys.isEmpty) return finish(sparkWindow(child).execute(), skewed)

    longMetric("hotKeys").set(ranges.head.hotKeys.size.toLong)
    longMetric("splits").set(tasks.toLong)
    val routed = routedSummaries(0)
    val dependency = shuffleDependency(pieces, ranges.head, 0, routed, routesHotKeys = !inPlace)
    val rest = sparkWindow(
      RowsScanExec(child.output, partitions(dependency, 0 until ranges.head.hashPartitions)))
    val parts =
      Seq(rest.execute(), hotKeyResults(ranges, dependency, routed, pieceSpecs)) ++
        (if (ordinarySpecs.isEmpty) Nil
         else Seq(sparkWindow(inputReading(ordinarySpecs)).execute()))
    finish(sparkContext.union(parts), skewed)
  }

  private def finish(result: RDD[InternalRow], decision: String): RDD[InternalRow] = {
    setTagValue(HotKeySplitWindowExec.Split, decision)
    SQLMetrics.postDriverMetricUpdates(
      sparkContext,
      sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY),
      Seq("skewedPartitions", "hotKeys", "splits").map(longMetric))
    result
  }

  /**
   * One window without an order whose every frame is a key's whole partition: a hot key's rows
   * stay in their pieces (one summary per key, made as the map tasks route the other keys),
   * which are read again to give each row its key's values, in map order as Spark reads them.
   * (Without an order, running frames and nth_value are refused at planning; a chain routes its
   * rows to the next window.)
   */
  private def inPlace: Boolean =
    windows.size == 1 && windows.head.orderSpec.isEmpty && levels.exists(_.wholeValuesOnly)

  /**
   * Where window `i`'s summaries are made: by the routing map tasks as they route the rows, when
   * they read no order (None: one job over the splits, in order).
   */
  private def routedSummaries(i: Int): Option[RoutedSummaries] =
    if (levels(i).summarizesInOrder) None
    else {
      val summaries = new RoutedSummaries
      // (Unnamed: a named accumulator's value goes to every task end event and the UI.)
      sparkContext.register(summaries)
      Some(summaries)
    }

  private def partitions(
      dependency: ShuffleDependency[Int, InternalRow, InternalRow],
      ids: Range): ShuffledRowRDD =
    new ShuffledRowRDD(
      dependency,
      readMetrics,
      ids.map(i => CoalescedPartitionSpec(i, i + 1)).toArray[ShufflePartitionSpec])

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
   * The rows of window `level`'s input shuffled by [[HotKeyRanges.router]]; with `routed`, each
   * map task also summarizes the rows it routes to each split. Without `routesHotKeys`, the hot
   * keys' rows are only summarized (their split partitions stay empty).
   */
  private def shuffleDependency(
      input: RDD[InternalRow],
      ranges: HotKeyRanges,
      level: Int,
      routed: Option[RoutedSummaries],
      routesHotKeys: Boolean): ShuffleDependency[Int, InternalRow, InternalRow] = {
    val keys = partitionSpec
    val order = routingOrder(level)
    val inputAttributes = inputOf(level)
    val summarizing = routed.map((_, levels(level)))
    val first = ranges.hashPartitions
    val withPartitionIds = input.mapPartitionsWithIndexInternal { (mapTask, rows) =>
      val routedRows = RoutingShuffle.routed(
        rows,
        ranges.router(keys, order, inputAttributes),
        ranges.numPartitions)
      summarizing.fold[Iterator[Product2[Int, InternalRow]]](routedRows) {
        case (summaries, functions) =>
          val summarizers = new functions.Summarizers
          val splits = new Array[functions.Summarizer](ranges.numSplits)
          val summarized = routedRows.map { routedRow =>
            val i = routedRow._1 - first
            if (i >= 0) {
              if (splits(i) == null) splits(i) = summarizers.newSplit()
              splits(i).add(routedRow._2)
            }
            routedRow
          }
          CompletionIterator[Product2[Int, InternalRow], Iterator[Product2[Int, InternalRow]]](
            if (routesHotKeys) summarized else summarized.filter(_._1 < first),
            summaries.add(
              mapTask -> splits.indices.filter(splits(_) != null).map(i =>
                i -> splits(i).result).toMap))
      }
    }
    RoutingShuffle.dependency(
      withPartitionIds,
      ranges.numPartitions,
      inputAttributes.size,
      longMetric("dataSize"),
      writeMetrics)
  }

  /**
   * The hot keys' splits, window by window: summarized (by the routing map tasks, or one job
   * when summaries read in order), seeded on the driver, then computed; each window's results
   * are routed by the next window's order. A key too large for a ranking function's int runs
   * Spark's windows in one task. [[inPlace]], the pieces are read again instead.
   */
  private def hotKeyResults(
      ranges: Seq[HotKeyRanges],
      dependency: ShuffleDependency[Int, InternalRow, InternalRow],
      routed: Option[RoutedSummaries],
      pieceSpecs: Seq[ShufflePartitionSpec]): RDD[InternalRow] = {
    val summaries = summariesOf(0, ranges.head, dependency, routed)
    val first = ranges.head.hashPartitions
    val maxRankedRows = conf.getConf(SkewAggConf.TEST_WINDOW_MAX_RANKED_ROWS)
    // The same keys, in the same order, in every window's ranges.
    val (splitKeys, sparksKeys) = ranges.head.hotKeys.indices.partition { k =>
      val rows = ranges.head.hotKeys(k).partitions.map(p => summaries(p - first).rows).sum
      levels.forall(_.splits(rows, maxRankedRows))
    }
    val firstSeeds = seedsOf(0, ranges.head, splitKeys, summaries)
    if (inPlace) { // (no ranking function without an order: every key was split)
      val valuesByKey = new java.util.HashMap[UnsafeRow, InternalRow]()
      ranges.head.hotKeys.foreach(h =>
        valuesByKey.put(h.key, firstSeeds(h.firstPartition - first)._2))
      return withKeyValues(inputReading(pieceSpecs).execute(), valuesByKey)
    }
    val splitRows = longMetric("splitRows")
    var results = evaluated(0, ranges.head, dependency, firstSeeds, counted = Some(splitRows))
    windows.indices.tail.foreach { level =>
      val next = ranges(level)
      val nextRouted = routedSummaries(level)
      val nextDependency =
        shuffleDependency(results, next, level, nextRouted, routesHotKeys = true)
      val seeds =
        seedsOf(level, next, splitKeys, summariesOf(level, next, nextDependency, nextRouted))
      results = evaluated(level, next, nextDependency, seeds, counted = None)
    }
    if (sparksKeys.isEmpty) results
    else {
      // Each such key's splits read in order by one task, Spark's sorts and windows over them.
      val whole = sparksKeys.map(ranges.head.hotKeys).map(h =>
        CoalescedPartitionSpec(h.partitions.head, h.partitions.last + 1))
      val keys = new ShuffledRowRDD(dependency, readMetrics, whole.toArray[ShufflePartitionSpec])
      sparkContext.union(results, sparkWindow(RowsScanExec(child.output, keys)).execute())
    }
  }

  /** Window `level`'s rows of each split of `dependency` in the order it reads them. */
  private def inOrder(level: Int): Iterator[InternalRow] => Iterator[InternalRow] = {
    // A split holds one key: sorted by the rest of the order (peers stay consecutive). When its
    // rows are read again (a summary job reads them in order, or the next window of the chain
    // reads their results), ties by the rows' bytes, so that every pass and every task attempt
    // reads one order; otherwise as Spark's sort (ties as they arrive, a radix sort when it can).
    val order = sortOrders(level).drop(partitionSpec.size)
    val input = inputOf(level)
    val sortSpill = longMetric("sortSpillSize")
    val readAgain = levels(level).summarizesInOrder || level < windows.size - 1
    if (order.isEmpty) identity
    else if (readAgain) ExternalSorts.sortTotally(_, order, input, sortSpill)
    else ExternalSorts.sortBy(_, order, input, sortSpill)
  }

  /** Window `level`'s summary of each split of `ranges`. */
  private def summariesOf(
      level: Int,
      ranges: HotKeyRanges,
      dependency: ShuffleDependency[Int, InternalRow, InternalRow],
      routed: Option[RoutedSummaries]): IndexedSeq[SplitSummary] = {
    val split = levels(level)
    routed match {
      case Some(byMapTask) => // (made as the map stage runs, which runs first)
        WindowShuffle.awaited(sparkContext.submitMapStage(dependency))
        byMapTask.summaries(ranges.numSplits, split)
      case None =>
        val sorted = inOrder(level)
        sparkContext.runJob(
          partitions(dependency, ranges.splitPartitions),
          (_: TaskContext, rows: Iterator[InternalRow]) => split.summarize(sorted(rows)))
          .toIndexedSeq
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
    val first = ranges.hashPartitions
    val seeds = new Array[(SplitSeed, InternalRow)](ranges.numSplits)
    splitKeys.map(ranges.hotKeys).foreach { hot =>
      val ids = hot.partitions.map(_ - first)
      val (keySeeds, values) = levels(level).seeds(ids.map(summaries(_)))
      ids.zip(keySeeds).foreach { case (i, seed) => seeds(i) = (seed, values) }
    }
    seeds
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
    partitions(dependency, ranges.splitPartitions).mapPartitionsWithIndexInternal { (i, rows) =>
      if (seeds(i) == null) Iterator.empty // (a key left to Spark's windows)
      else {
        val input = counted.fold(rows)(metric => rows.map { row => metric += 1; row })
        split.evaluate(sorted(input), seeds(i)._1, seeds(i)._2, peerBuffer)
      }
    }
  }

  /** [[inPlace]]: the hot keys' rows of `pieces`, each with its key's values. */
  private def withKeyValues(
      pieces: RDD[InternalRow],
      valuesByKey: java.util.HashMap[UnsafeRow, InternalRow]): RDD[InternalRow] = {
    val split = levels.head
    val keys = partitionSpec
    val input = child.output
    val splitRows = longMetric("splitRows")
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

  override protected def withNewChildInternal(newChild: SparkPlan): HotKeySplitWindowExec =
    copy(child = newChild)
}

object HotKeySplitWindowExec {

  /** The split of the chain `windows` (bottom first) over `child`. */
  def apply(
      windows: Seq[ChainedWindow],
      partitionSpec: Seq[Expression],
      forced: Boolean,
      child: SparkPlan): HotKeySplitWindowExec = HotKeySplitWindowExec(
    windows.map(_.windowExpression),
    windows.map(_.orderSpec),
    windows.map(_.sort),
    partitionSpec,
    forced,
    child)

  /** What the run found and did, with its numbers (set when it runs). */
  val Split: TreeNodeTag[String] = TreeNodeTag[String]("skewagg.windowSplit")

  /** The window's skewed partitions: with the SKEW_AGG hint (`forced`), all that hold rows. */
  def skewOf(sizes: Array[Long], forced: Boolean, conf: SQLConf): SkewedPartitions = {
    val found = SkewedPartitions.find(sizes, conf)
    if (!forced) found
    else found.copy(skewed = sizes.indices.filter(sizes(_) > 0).map(i => (i, sizes(i))))
  }

  /** "1 skewed partition(s) of the window's shuffle (partition 3 is 143.3 KiB, 40x ...)". */
  def describe(skew: SkewedPartitions, forced: Boolean): String = {
    val partitions =
      if (forced) s"hint ${SkewAggHints.Force}: ${skew.skewed.size} partition(s) of the " +
        "window's shuffle read as skewed"
      else s"${skew.skewed.size} skewed partition(s) of the window's shuffle"
    s"$partitions (${SkewAggLocalStageExec.describe("partition", skew)})"
  }
}
