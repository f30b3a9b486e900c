package org.apache.spark.sql.skewagg.window

import org.apache.spark.sql.execution.{
  CoalescedPartitionSpec, PartialReducerPartitionSpec, ShufflePartitionSpec
}
import org.apache.spark.sql.execution.adaptive.ShufflePartitionsUtil
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{AveragedBlockSizes, SkewAggConf, SkewedPartitions}
import org.apache.spark.sql.skewagg.hotkey.HotKeyRanges

/**
 * What the window's shuffle measured when it ran: each reducer's size, and a reducer's sizes by
 * map output (-1 for a map output whose status is gone), as Spark's tracker holds them.
 */
final case class WindowShuffleSizes(byReducer: Array[Long], byMapOutput: Int => Array[Long])

/**
 * What a run of the split reads besides the sizes: the settings the query runs with, the task
 * slots it is planned for, the SKEW_AGG hint (`forced`), whether the window has no PARTITION BY
 * (`global`) or leaves its hot keys in place ([[HotKeySplitWindowExec.inPlace]]), and whether
 * Spark averaged the shuffle's block sizes ([[AveragedBlockSizes]]).
 */
final case class WindowSplitSettings(
    conf: SQLConf,
    slots: Int,
    forced: Boolean,
    global: Boolean,
    inPlace: Boolean,
    averaged: Option[AveragedBlockSizes.Averaged] = None) {
  def maxSplits: Int = conf.getConf(SkewAggConf.WINDOW_SPLIT_MAX_SPLITS)
  def minKeyRows: Long = conf.getConf(SkewAggConf.WINDOW_SPLIT_MIN_KEY_ROWS)
}

/**
 * The skewed partitions of the window's shuffle (`skew`), read in `pieces` (map-output ranges of
 * about `pieceSize`; the reducers of a spec holding one of them, whole), the specs that hold none
 * (`ordinary`, Spark's window as before), the hash partitions the sample plans for (`slices`),
 * the map outputs it reads, each with the rows each of its rows stands for (`sample`), and what
 * the split costs against Spark's window (`cost`).
 */
final case class WindowPieces(
    skew: SkewedPartitions,
    pieceSize: Long,
    pieces: Seq[ShufflePartitionSpec],
    ordinary: Seq[ShufflePartitionSpec],
    slices: Int,
    sample: Seq[(ShufflePartitionSpec, Double)],
    cost: WindowSplitCost)

/**
 * The split a run makes: `pieces` routed by `routings` (one per window of the chain, the first
 * with `ordinaryTasks` hash partitions for the keys that are not hot), the hot keys read by
 * `tasks` tasks, and what it found and does (`description`).
 */
final case class WindowSplit(
    pieces: WindowPieces,
    routings: Seq[HotKeyRanges],
    ordinaryTasks: Int,
    tasks: Int,
    description: String)

/**
 * Which sampled hot keys a split computes (`split`, by index) and which run Spark's window in one
 * task each (`spark`), and why (`note`: None when every key is split).
 */
final case class SplitKeys(split: Seq[Int], spark: Seq[Int], note: Option[String])

/**
 * The window split as a value: what a run of [[HotKeySplitWindowExec]] does, computed from what
 * it measured in three pure functions (no job, no tracker, no session), around the two jobs the
 * run makes itself (the sample, then the summaries of the splits):
 *
 *  1. [[pieces]]: the shuffle's sizes, the specs Spark reads it in and the settings → the skewed
 *     partitions read in pieces and the map outputs the sample reads, or why the window runs as
 *     Spark's (nothing skewed, or a split that would not pay: [[WindowSplitCost]]);
 *  2. [[split]]: those pieces and the sample's routings → the routings the run follows, its
 *     tasks and its description, or why no key is split;
 *  3. [[splitKeys]]: what the summaries say of each hot key → the keys split and those left to
 *     Spark's window, with the reason.
 *
 * The run ([[HotKeySplitWindowJobs]]) only runs what they return and records it.
 */
object WindowSplitPlan {

  /** The step's reason for a window that runs as Spark's because nothing is skewed. */
  val NotSkewed = "no partition of the window's shuffle skewed when it ran: Spark's window"

  /** The skewed partitions of the window's shuffle, by the per-slot share alone. */
  def skew(sizes: WindowShuffleSizes, settings: WindowSplitSettings): SkewedPartitions =
    HotKeySplitWindowExec.skewOf(sizes.byReducer, settings.forced, settings.conf, settings.slots)

  /**
   * Step 1. The skewed partitions by the per-slot share alone ([[skew]],
   * [[HotKeySplitWindowExec.skewOf]]); those of them in `specs` (Spark's read) are read in
   * map-output pieces of [[SkewedPartitions.splitSize]] (as Spark's skew join cuts them), the
   * other reducers of such a spec whole. Without PARTITION BY the one key is the whole
   * partition: it is sampled in as many slices as pieces of that size would hold it, and from at
   * least as many map outputs (an order that follows the input's files is a run per map output).
   * A split that would take longer than Spark's stage ([[WindowSplitCost]]) is not made, unless
   * the SKEW_AGG hint asks for it.
   */
  def pieces(
      sizes: WindowShuffleSizes,
      specs: Seq[ShufflePartitionSpec],
      settings: WindowSplitSettings): Either[String, WindowPieces] =
    measured(sizes, specs, settings).flatMap { p =>
      if (settings.forced || p.cost.pays) Right(p)
      else {
        val found = HotKeySplitWindowExec.describe(p.skew, settings.forced, settings.global)
        val cost = p.cost.describe(p.skew.format)
        Left(s"$found, left to Spark's window: the split would take $cost")
      }
    }

  /**
   * Step 1's pieces, sample and cost, whether the split pays or not (the cost's shared cases,
   * `tests/data/skew_test_vectors.json`, read it here); Left only where nothing is skewed.
   */
  def measured(
      sizes: WindowShuffleSizes,
      specs: Seq[ShufflePartitionSpec],
      settings: WindowSplitSettings): Either[String, WindowPieces] = {
    val conf = settings.conf
    val byReducer = sizes.byReducer
    val skew = WindowSplitPlan.skew(sizes, settings)
    val skewedIds = skew.skewed.map(_._1).toSet
    val (skewedSpecs, ordinary) = specs.partition(reducers(_).exists(skewedIds))
    if (skewedSpecs.isEmpty) {
      val unseen = settings.averaged
        .map(a => s" (skew unseen: ${a.text(conf.getConf(SkewAggConf.SKEW_FACTOR))})")
      return Left(NotSkewed + unseen.getOrElse(""))
    }
    val pieceSize = SkewedPartitions.splitSize(byReducer, skew, conf)
    val pieces = skewedSpecs.flatMap(reducers).flatMap { i =>
      val whole = Seq(CoalescedPartitionSpec(i, i + 1, byReducer(i)))
      if (!skewedIds(i)) whole else mapRanges(i, sizes.byMapOutput(i), pieceSize).getOrElse(whole)
    }
    val slices =
      if (!settings.global) pieces.size
      else math.max(pieces.size, math.ceil(skew.skewed.map(_._2).sum.toDouble / pieceSize).toInt)
    val sampled = skew.skewed.map(_._1).filter(i => skewedSpecs.exists(reducers(_).contains(i)))
    val sample = SampledMapOutputs.of(
      sampled.map(i => i -> sizes.byMapOutput(i)),
      conf.getConf(SkewAggConf.WINDOW_SPLIT_SAMPLE_FRACTION),
      atLeast = math.min(slices, settings.maxSplits))
    val cost = WindowSplitCost.of(
      byReducer,
      skew,
      pieces,
      pieceSize,
      ordinary,
      sample.map(_._1),
      settings.maxSplits)
    Right(WindowPieces(skew, pieceSize, pieces, ordinary, slices, sample, cost))
  }

  /**
   * Step 2. The sample's routings (one per window, [[HotKeyRanges.sample]] over `pieces.sample`)
   * become the run's: the keys that are not hot by hash into as many tasks as their estimated
   * rows fill (at least one, at most one per piece); in place, each hot key one split (its rows
   * stay in their pieces, read again). Without a hot key, why none was split.
   */
  def split(
      pieces: WindowPieces,
      sampled: Seq[HotKeyRanges],
      settings: WindowSplitSettings): Either[String, WindowSplit] = {
    val first = sampled.head
    val ordinaryTasks = math.min(
      pieces.pieces.size,
      math.max(1, math.ceil(first.ordinaryRows / first.averagePartitionRows).toInt))
    val routings = {
      val hashed = first.withHashPartitions(ordinaryTasks) +: sampled.tail
      if (settings.inPlace) hashed.map(_.unsplit) else hashed
    }
    val tasks = if (settings.inPlace) pieces.pieces.size else routings.head.numSplits
    val split = routings.head.describe(
      if (settings.inPlace) "map-output piece (no order)" else "order",
      settings.minKeyRows,
      SkewAggConf.WINDOW_SPLIT_MIN_KEY_ROWS.key,
      tasks,
      wholePartition = settings.global)
    val chained = routings.tail.filter(_.hotKeys.nonEmpty)
      .map(r => s", then by the next window's order into ${r.numSplits} tasks")
    // (Where the sample saw no row of another key, every key of those partitions is hot.)
    val others =
      if (routings.head.hotKeys.isEmpty || settings.global || first.ordinaryRows < 1) ""
      else s"; the other keys of those partitions into $ordinaryTasks task(s)"
    val found = HotKeySplitWindowExec.describe(pieces.skew, settings.forced, settings.global)
    val cost = pieces.cost.describe(pieces.skew.format)
    val pays =
      if (pieces.cost.pays) s"the split takes $cost"
      else s"by the hint, though the split takes $cost, more than Spark's"
    val read = s"read in ${pieces.pieces.size} pieces ($pays)"
    val description = s"$found, $read; $split${chained.mkString}$others"
    if (routings.head.hotKeys.isEmpty) Left(description)
    else Right(WindowSplit(pieces, routings, ordinaryTasks, tasks, description))
  }

  /**
   * Step 3. Of the hot keys (by index), those whose rows every window's functions can count
   * (`fits`: a ranking function's int) and whose splits compute them exactly (`exact`: bounded
   * RANGE frames that reach no further than the setting across a split's edge) are split; the
   * others run Spark's window in one task each, said in the note.
   */
  def splitKeys(
      fits: IndexedSeq[Boolean],
      exact: IndexedSeq[Boolean],
      conf: SQLConf): SplitKeys = {
    val (fitting, tooLarge) = fits.indices.partition(fits)
    val (split, rangedTooFar) = fitting.partition(exact)
    val maxRangeFrameRows = SkewAggConf.WINDOW_SPLIT_MAX_RANGE_FRAME_ROWS
    val unsplit = Seq(
      tooLarge -> "too many rows for a ranking function's int",
      rangedTooFar -> ("bounded RANGE frames reaching more than " +
        s"${conf.getConf(maxRangeFrameRows)} rows across a split's edge " +
        s"(${maxRangeFrameRows.key}), or bounds that wrap around")).collect {
      case (keys, why) if keys.nonEmpty => s"${keys.size} key(s) in Spark's window: $why"
    }
    val note = if (unsplit.isEmpty) None else Some(unsplit.mkString("; "))
    SplitKeys(split, tooLarge ++ rangedTooFar, note)
  }

  /** The reducers a spec of Spark's read reads whole (none: a piece another rule cut). */
  def reducers(spec: ShufflePartitionSpec): Range = spec match {
    case CoalescedPartitionSpec(start, end, _) => start until end
    case _ => Range(0, 0)
  }

  /**
   * Reducer `reducer`'s map outputs in consecutive ranges of about `target` bytes, as Spark's
   * `ShufflePartitionsUtil.createSkewPartitionSpecs` cuts them (None: a map output is gone, or
   * the reducer fits one range).
   */
  def mapRanges(
      reducer: Int,
      mapSizes: Array[Long],
      target: Long): Option[Seq[PartialReducerPartitionSpec]] = {
    if (mapSizes.exists(_ < 0)) return None
    val starts = ShufflePartitionsUtil.splitSizeListByTargetSize(
      mapSizes,
      target,
      ShufflePartitionsUtil.SMALL_PARTITION_FACTOR)
    if (starts.length <= 1) None
    else Some(starts.indices.map { i =>
      val end = if (i == starts.length - 1) mapSizes.length else starts(i + 1)
      PartialReducerPartitionSpec(reducer, starts(i), end, mapSizes.slice(starts(i), end).sum)
    })
  }
}
