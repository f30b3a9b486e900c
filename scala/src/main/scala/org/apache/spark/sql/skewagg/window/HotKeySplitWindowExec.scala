package org.apache.spark.sql.skewagg.window

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, NamedExpression, SortOrder}
import org.apache.spark.sql.catalyst.plans.physical.{Partitioning, UnknownPartitioning}
import org.apache.spark.sql.catalyst.util.truncatedString
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  SkewAggConf, SkewAggDecision, RecordedDecisions, SkewAggHints, SkewAggLocalStageExec,
  SkewAggWindowExec, SkewedPartitions
}
import org.apache.spark.sql.skewagg.hotkey.{HotKeySplitMetrics, HotKeySplitSteps}

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
 * Execution ([[HotKeySplitWindowJobs]] runs what [[WindowSplitPlan]] decides, on the
 * hot-key steps; every decision is a function of the input, so task retries are safe):
 *  1. Partitions that are not skewed run Spark's own sort and window, as before.
 *  2. The skewed ones are read in map-output pieces (as Spark's skew join reads them); one job
 *     samples a part of their map outputs ([[SampledMapOutputs]], [[HotKeyRanges.sample]]): hot
 *     keys, and bounds of their order values. Without a hot key, they run Spark's sort and
 *     window too. Before the sample, the split is weighed against the stage of Spark's window it
 *     replaces, from the sizes ([[WindowSplitCost]]): one that would not pay is not made.
 *  3. One shuffle of the pieces: the other keys by hash to as many partitions as their rows fill
 *     (the sample's estimate, in pieces; Spark's sort and window again), each hot key by order
 *     range to its own split partitions, so peers (equal order values) meet in one split and the
 *     splits hold the key in order.
 *  4. Each split is summarized (rows, peer groups, partial aggregates): by the map tasks of that
 *     shuffle as they route its rows ([[SummariesByMapTask]]), or, when a summary reads the rows in
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
  private[window] def inputOf(i: Int): Seq[Attribute] =
    child.output ++ windows.take(i).flatMap(_.windowExpression.map(_.toAttribute))

  override def outputPartitioning: Partitioning = UnknownPartitioning(0)

  private[window] def sortOrders: Seq[Seq[SortOrder]] = ChainedWindow.sortOrders(windows)

  /** The order window `i` reads one key's rows in: its sort after the PARTITION BY keys. */
  private[window] def readOrder(i: Int): Seq[SortOrder] = sortOrders(i).drop(partitionSpec.size)

  // (Read in place, the rows of several hot keys of a piece are in no order.)
  override def outputOrdering: Seq[SortOrder] = if (inPlace) Nil else sortOrders.last

  /** The metrics of the hot-key split, which its run sets. */
  private lazy val hotKeySplitMetrics = HotKeySplitMetrics(sparkContext)

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "skewedPartitions" -> SQLMetrics.createMetric(sparkContext, "number of skewed partitions"),
    "splitRows" -> SQLMetrics.createMetric(sparkContext, "rows in splits"),
    "sortSpillSize" -> SQLMetrics.createSizeMetric(sparkContext, "split sort spill size")) ++
    hotKeySplitMetrics.byName

  override def nodeName: String = "HotKeySplitWindow"

  override def decision: String = RecordedDecisions.atRunTime(this).lastOption.map(_.what)
    .getOrElse("hot keys of skewed window partitions split by order (not run yet)")

  override def leftAloneWhenRun: Boolean =
    RecordedDecisions.atRunTime(this).lastOption.exists(_.leftAlone)

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
  @transient private[window] lazy val splitFunctions
      : Either[String, IndexedSeq[SplitWindowFunctions]] = {
    val split = windows.indices.map { i =>
      val w = windows(i)
      WindowSplitSupport.functions(w.windowExpression, w.orderSpec, windows.size > 1, conf)
        .map(new SplitWindowFunctions(
          _,
          w.windowExpression,
          w.orderSpec,
          readOrder(i),
          inputOf(i),
          conf.getConf(SkewAggConf.WINDOW_SPLIT_MAX_RANGE_FRAME_ROWS)))
    }
    split.collectFirst { case Left(reason) => reason }.toLeft(split.collect { case Right(f) => f })
  }

  /** [[splitFunctions]], read once the run has found them. */
  @transient private[window] lazy val levels: IndexedSeq[SplitWindowFunctions] =
    splitFunctions.getOrElse(IndexedSeq.empty)

  /**
   * One window without an order whose every frame is a key's whole partition: a hot key's rows
   * stay in their pieces (one summary per key, made as the map tasks route the other keys),
   * which are read again to give each row its key's values, in map order as Spark reads them.
   * (Without an order, running frames and nth_value are refused at planning; a chain routes its
   * rows to the next window.)
   */
  private[window] def inPlace: Boolean =
    windows.size == 1 && windows.head.orderSpec.isEmpty && levels.exists(_.wholeValuesOnly)

  override protected def doExecute(): RDD[InternalRow] = {
    val steps = new HotKeySplitSteps(sparkContext, hotKeySplitMetrics)
    new HotKeySplitWindowJobs(this, steps).execute()
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

  /**
   * The step its run decides ([[SkewAggDecision.AtRunTime]]): what it found and did, with its
   * numbers.
   */
  val Step = "window split"

  /**
   * The window's skewed partitions, by the per-slot share alone on `slots` task slots (a few
   * keys in about as many partitions, or the one partition of a window without PARTITION BY,
   * outlast an even share of the stage on many slots however alike they are): with the SKEW_AGG
   * hint (`forced`), all that hold rows.
   */
  def skewOf(sizes: Array[Long], forced: Boolean, conf: SQLConf, slots: Int): SkewedPartitions = {
    val found = SkewedPartitions.find(sizes, conf, slots)
    if (!forced) found
    else found.copy(skewed = sizes.indices.filter(sizes(_) > 0).map(i => (i, sizes(i))))
  }

  /** The task slots the split of a shuffle of `partitions` partitions is planned for. */
  def slotsFor(partitions: Int, conf: SQLConf): Int =
    SkewedPartitions.slotsOfSplit(
      partitions,
      conf,
      conf.getConf(SkewAggConf.WINDOW_SPLIT_MAX_SPLITS))

  /**
   * "1 skewed partition(s) of the window's shuffle (partition 3 is 143.3 KiB, 40x ...)"; without
   * PARTITION BY (`global`), "no PARTITION BY: Spark runs the window in one task (58.2 MiB, 13x
   * the per-slot share on 64 slots)".
   */
  def describe(skew: SkewedPartitions, forced: Boolean, global: Boolean = false): String =
    if (global) {
      val size = skew.skewed.map(_._2).sum
      val share =
        if (skew.slotShare > 0) f", ${size.toDouble / skew.slotShare}%.0fx the per-slot share " +
          s"on ${skew.slots} slots"
        else ""
      val hint = if (forced) s"hint ${SkewAggHints.Force}; " else ""
      s"${hint}no PARTITION BY: Spark runs the window in one task (${skew.format(size)}$share)"
    } else {
      val partitions =
        if (forced) s"hint ${SkewAggHints.Force}: ${skew.skewed.size} partition(s) of the " +
          "window's shuffle read as skewed"
        else s"${skew.skewed.size} skewed partition(s) of the window's shuffle"
      s"$partitions (${SkewAggLocalStageExec.describe("partition", skew)})"
    }
}
