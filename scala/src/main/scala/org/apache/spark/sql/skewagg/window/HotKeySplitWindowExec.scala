package org.apache.spark.sql.skewagg.window

import org.apache.spark.{ShuffleDependency, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Ascending, Attribute, Expression, Murmur3Hash, NamedExpression, SortOrder
}
import org.apache.spark.sql.catalyst.plans.physical.{Partitioning, UnknownPartitioning}
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.catalyst.util.truncatedString
import org.apache.spark.sql.execution.{
  CoalescedPartitionSpec, ShufflePartitionSpec, ShuffledRowRDD, SortExec, SparkPlan, SQLExecution,
  UnaryExecNode, UnsafeRowSerializer
}
import org.apache.spark.sql.execution.adaptive.{
  AQEShuffleReadExec, ShufflePartitionsUtil, ShuffleQueryStageExec
}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.execution.metric.{
  SQLMetric, SQLMetrics, SQLShuffleReadMetricsReporter, SQLShuffleWriteMetricsReporter
}
import org.apache.spark.sql.execution.window.WindowExec
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  ExternalSorts, HotKeyRanges, SkewAggConf, SkewAggHints, SkewAggLocalStageExec, SkewAggWindowExec,
  SkewedPartitions
}
import org.apache.spark.sql.types.MapType

/**
 * Spark's window (`WindowExec` over its sort) whose hot keys are split by ranges of the window's
 * order across several tasks.
 *
 * Plan shape: planned by [[SplitSkewedWindow]] in place of `WindowExec ← SortExec` when the
 * window's shuffle (a materialized query stage, maybe read coalesced) has skewed partitions and
 * every window function can be split ([[WindowSplitSupport]]). `child` is the window's input: the
 * stage, or rows computed from it by Project / Filter; `sortOrder` is the order Spark sorted it in
 * for the window (the window's keys and order, or more that a window above it needs); `forced`
 * (the SKEW_AGG hint) reads every partition as skewed.
 *
 * Execution (every decision is a function of the input, so task retries are safe):
 *  1. Partitions that are not skewed run Spark's own sort and window, as before.
 *  2. The skewed ones are read in map-output pieces (as Spark's skew join reads them); one job
 *     samples them ([[HotKeyRanges.sample]]): hot keys, and bounds of their order values. Without
 *     a hot key, they run Spark's sort and window too.
 *  3. One shuffle of the pieces: the other keys by hash to as many partitions as pieces (Spark's
 *     sort and window again), each hot key by order range to its own split partitions, so peers
 *     (equal order values) meet in one split and the splits hold the key in order.
 *  4. One job summarizes each split (rows, peer groups, partial aggregates); the driver folds
 *     them into each split's seed and the key's whole-partition values
 *     ([[SplitWindowFunctions]]); each split then sorts its rows and computes their results.
 *
 * Output: partitioned by nothing Spark knows (hot keys span several partitions), each partition
 * in `sortOrder`, as Spark's window's is. Metrics: skewed partitions, hot keys split,
 * splits, rows in splits, sort spill.
 */
case class HotKeySplitWindowExec(
    windowExpression: Seq[NamedExpression],
    partitionSpec: Seq[Expression],
    orderSpec: Seq[SortOrder],
    sortOrder: Seq[SortOrder],
    forced: Boolean,
    child: SparkPlan)
    extends UnaryExecNode with SkewAggWindowExec {

  override def output: Seq[Attribute] = child.output ++ windowExpression.map(_.toAttribute)

  override def outputPartitioning: Partitioning = UnknownPartitioning(0)

  override def outputOrdering: Seq[SortOrder] = sortOrder

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
    val functions = truncatedString(windowExpression, "[", ", ", "]", maxFields)
    val keys = truncatedString(partitionSpec, "[", ", ", "]", maxFields)
    val order = truncatedString(orderSpec, "[", ", ", "]", maxFields)
    s"HotKeySplitWindow $functions, $keys, $order, hotKeys=splitByOrder"
  }

  private lazy val functions: Seq[SplitWindowFunction] =
    WindowSplitSupport.functions(windowExpression, orderSpec, conf).fold(
      reason => throw new IllegalStateException(s"HotKeySplitWindow planned for $reason"),
      identity)

  /** The shuffle stage below the input, and how it is read (None: each partition alone). */
  private lazy val (stage, read): (ShuffleQueryStageExec, Option[AQEShuffleReadExec]) = {
    def down(plan: SparkPlan): (ShuffleQueryStageExec, Option[AQEShuffleReadExec]) =
      plan match {
        case s: ShuffleQueryStageExec => (s, None)
        case r @ AQEShuffleReadExec(s: ShuffleQueryStageExec, _) => (s, Some(r))
        case other => down(other.children.head)
      }
    down(child)
  }

  /** The input, reading the stage's `specs` only. */
  private def inputReading(specs: Seq[ShufflePartitionSpec]): SparkPlan = {
    val newRead = AQEShuffleReadExec(stage, specs)
    child.transformUp {
      case r: AQEShuffleReadExec if read.contains(r) => newRead
      case s: ShuffleQueryStageExec if (s eq stage) && read.isEmpty => newRead
    }
  }

  /** Spark's own sort and window over `input`. */
  private def sparkWindow(input: SparkPlan): SparkPlan =
    WindowExec(windowExpression, partitionSpec, orderSpec, SortExec(sortOrder, false, input))

  override protected def doExecute(): RDD[InternalRow] = {
    val stats = stage.mapStats.get
    val sizes = stats.bytesByPartitionId
    val specs: Seq[ShufflePartitionSpec] = read.map(_.partitionSpecs).getOrElse(
      sizes.indices.map(i => CoalescedPartitionSpec(i, i + 1, sizes(i))))
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
    val ranges = HotKeyRanges.sample(
      pieces,
      partitionSpec,
      routingOrder,
      child.output,
      hashPartitions = pieceSpecs.size,
      minKeyRows,
      conf.getConf(SkewAggConf.WINDOW_SPLIT_MAX_SPLITS),
      conf.getConf(SkewAggConf.WINDOW_SPLIT_SAMPLE_SIZE),
      sampleFraction = 1.0,
      slots = 1,
      factor = 0.0
    ) // (the partitions are skewed: skewagg's per-slot test was made on them)
    val skewed = s"${HotKeySplitWindowExec.describe(skew, forced)}, read in ${pieceSpecs.size} " +
      "pieces; " +
      ranges.describe("order", minKeyRows, SkewAggConf.WINDOW_SPLIT_MIN_KEY_ROWS.key)
    if (ranges.hotKeys.isEmpty) return finish(sparkWindow(child).execute(), skewed)

    longMetric("hotKeys").set(ranges.hotKeys.size.toLong)
    longMetric("splits").set(ranges.numSplits.toLong)
    val dependency = shuffleDependency(pieces, ranges)
    def partitions(ids: Range) =
      new ShuffledRowRDD(
        dependency,
        readMetrics,
        ids.map(i => CoalescedPartitionSpec(i, i + 1)).toArray)
    val rest = sparkWindow(RowsScanExec(child.output, partitions(0 until ranges.hashPartitions)))
    val parts =
      Seq(rest.execute(), hotKeyResults(partitions(ranges.splitPartitions), ranges, dependency)) ++
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
   * What the hot keys' rows are split by: the window's order, or without one (every function
   * then reads the whole partition, in no order) a hash of the row.
   */
  private def routingOrder: Seq[SortOrder] =
    if (orderSpec.nonEmpty) orderSpec
    else {
      val hashable = child.output.filterNot(_.dataType.existsRecursively(_.isInstanceOf[MapType]))
      Seq(SortOrder(new Murmur3Hash(hashable), Ascending))
    }

  /** The pieces shuffled by [[HotKeyRanges.router]]. */
  private def shuffleDependency(
      input: RDD[InternalRow],
      ranges: HotKeyRanges): ShuffleDependency[Int, InternalRow, InternalRow] = {
    val keys = partitionSpec
    val order = routingOrder
    val inputAttributes = child.output
    val withPartitionIds = input.mapPartitionsWithIndexInternal { (_, rows) =>
      val partitionOf = ranges.router(keys, order, inputAttributes)
      val pair = new org.apache.spark.util.MutablePair[Int, InternalRow]()
      rows.map(row => pair.update(partitionOf(row), row)) // (no copy, as ShuffleExchangeExec)
    }
    new ShuffleDependency[Int, InternalRow, InternalRow](
      withPartitionIds,
      new org.apache.spark.PartitionIdPassthrough(ranges.numPartitions),
      new UnsafeRowSerializer(inputAttributes.size, longMetric("dataSize")),
      shuffleWriterProcessor = ShuffleExchangeExec.createShuffleWriteProcessor(writeMetrics))
  }

  /**
   * The hot keys' splits: summarized (one job), seeded on the driver, then computed; a key too
   * large for a ranking function's int runs Spark's window in one task.
   */
  private def hotKeyResults(
      splits: RDD[InternalRow],
      ranges: HotKeyRanges,
      dependency: ShuffleDependency[Int, InternalRow, InternalRow]): RDD[InternalRow] = {
    val split = new SplitWindowFunctions(functions, windowExpression, orderSpec, child.output)
    // A split holds one key: sorted by the rest of the order (peers stay consecutive), and ties
    // by the rows' bytes, so that the summary and the evaluation read one order.
    val order = sortOrder.drop(partitionSpec.size)
    val output = child.output
    val sortSpill = longMetric("sortSpillSize")
    val splitRows = longMetric("splitRows")
    def inOrder(rows: Iterator[InternalRow]) =
      if (order.isEmpty) rows else ExternalSorts.sortTotally(rows, order, output, sortSpill)
    val summarizesInOrder = split.summarizesInOrder
    val summaries = sparkContext.runJob(
      splits,
      (_: TaskContext, rows: Iterator[InternalRow]) =>
        split.summarize(if (summarizesInOrder) inOrder(rows) else rows))
    val first = ranges.hashPartitions
    val seeds = new Array[SplitSeed](ranges.numSplits)
    val keyValues = new Array[InternalRow](ranges.numSplits)
    val maxRankedRows = conf.getConf(SkewAggConf.TEST_WINDOW_MAX_RANKED_ROWS)
    val (splitKeys, sparksKeys) = ranges.hotKeys.partition { h =>
      split.splits(h.partitions.map(p => summaries(p - first).rows).sum, maxRankedRows)
    }
    splitKeys.foreach { hot =>
      val ids = hot.partitions.map(_ - first)
      val (keySeeds, values) = split.seeds(ids.map(summaries(_)))
      ids.zip(keySeeds).foreach { case (i, seed) => seeds(i) = seed; keyValues(i) = values }
    }
    val peerBuffer = PeerBuffer(
      conf.windowExecBufferInMemoryThreshold,
      conf.windowExecBufferSpillThreshold)
    val splitResults = splits.mapPartitionsWithIndexInternal { (i, rows) =>
      if (seeds(i) == null) Iterator.empty // (a key left to Spark's window, below)
      else {
        val counted = rows.map { row => splitRows += 1; row }
        split.evaluate(inOrder(counted), seeds(i), keyValues(i), peerBuffer)
      }
    }
    if (sparksKeys.isEmpty) splitResults
    else {
      // Each such key's splits read in order by one task, Spark's sort and window over them.
      val whole =
        sparksKeys.map(h => CoalescedPartitionSpec(h.partitions.head, h.partitions.last + 1))
      val keys = new ShuffledRowRDD(dependency, readMetrics, whole.toArray[ShufflePartitionSpec])
      sparkContext.union(splitResults, sparkWindow(RowsScanExec(child.output, keys)).execute())
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): HotKeySplitWindowExec =
    copy(child = newChild)
}

object HotKeySplitWindowExec {

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
