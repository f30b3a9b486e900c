package org.apache.spark.sql.skewagg.window

import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute, AttributeReference, DenseRank, EvalMode, Expression, GenericInternalRow, JoinedRow,
  MutableProjection, NamedExpression, NthValue, NTile, RankLike, RowNumberLike, RowOrdering,
  SizeBasedWindowFunction, SortOrder, SpecificInternalRow, UnsafeProjection, UnsafeRow,
  WindowExpression
}
import org.apache.spark.sql.catalyst.expressions.aggregate.{DeclarativeAggregate, First, Last, Sum}
import org.apache.spark.sql.execution.ExternalAppendOnlyUnsafeRowArray
import org.apache.spark.sql.skewagg.ansi.{EvalModes, WrappingLongSum}
import org.apache.spark.sql.skewagg.hotkey.{ExternalSorts, SpillableRowArrays, SplitSummarizer}
import org.apache.spark.sql.types.IntegralType

/**
 * What one split (one order range of one hot key) holds, for the splits around it: its rows, its
 * peer groups and the order values of its last row (when dense_rank needs them), the partial
 * buffers of its aggregates (`SplitWindowFunctions.partials`' layout), and the inputs at its
 * edges that lag and lead reach (`SplitOffsets.Halo`), nth_value (`SplitNthValues.Head`),
 * bounded ROWS frames (`SplitSlidingFrames.Edges`) and bounded RANGE frames
 * (`SplitRangeFrames.Edges`).
 */
final case class SplitSummary(
    rows: Long,
    peerGroups: Long,
    lastOrder: Option[UnsafeRow],
    partial: InternalRow,
    halo: Seq[IndexedSeq[UnsafeRow]],
    heads: Seq[(Long, IndexedSeq[UnsafeRow])],
    frames: SplitSlidingFrames.Edges,
    ranges: SplitRangeFrames.Edges)

/**
 * What a split starts from: its running functions' buffers after the splits before it, the
 * inputs lag and lead reach beyond it (`SplitOffsets.seeds`), and the rows its bounded ROWS
 * and RANGE frames reach beyond it (`SplitSlidingFrames.seeds`, `SplitRangeFrames.seeds`).
 */
final case class SplitSeed(
    running: InternalRow,
    offsets: Seq[IndexedSeq[UnsafeRow]],
    frames: SplitSlidingFrames.Edges,
    ranges: SplitRangeFrames.Edges)

/**
 * Spark's window buffer thresholds (`spark.sql.windowExec.buffer.*`), for one peer group, or for
 * a split's rows that lead IGNORE NULLS reads ahead in.
 */
final case class PeerBuffer(inMemoryRows: Int, spillRows: Int) {
  def create(): ExternalAppendOnlyUnsafeRowArray =
    SpillableRowArrays.create(inMemoryRows, spillRows)
}

/**
 * The split functions of one window, bound to its `input`, and the arithmetic of a split key.
 *
 * Shape: each split of a hot key is summarized ([[summarize]], one task per split), the driver
 * folds the summaries in order into each split's seed and the key's whole-partition values
 * ([[seeds]]), and each split then computes its rows' results from its seed ([[evaluate]]).
 *
 * Rule: a split's seed is exactly the buffer Spark's window holds after the key's rows in the
 * splits before it: for aggregates (first / last values too), Spark's merge of those splits'
 * partial buffers, in order (an integral sum merged wrapping, [[WrappingLongSum]], so that only
 * an overflow of a true running value or of the key's total fails, as in Spark); for row_number
 * and rank, the rows before; for dense_rank, the peer groups before and the order values of the
 * last row before; for ntile, its buffer after the rows before ([[NTileSeed]]); for nth_value,
 * the n-th counted input before and the rows counted ([[SplitNthValues]]); cume_dist and
 * percent_rank also read the key's rows (`n`); lag and lead, the inputs beyond the split
 * ([[SplitOffsets]]). Rows are then
 * updated and evaluated with the functions' own expressions, in the window's order: ROWS frames
 * after each row, RANGE frames after each peer group. Ties never straddle two splits (the
 * routing keeps equal order values together), so a split starts a peer group; within a split,
 * every pass reads ties in one order (the caller's).
 */
final class SplitWindowFunctions(
    splitFunctions: Seq[SplitWindowFunction],
    windowExpression: Seq[NamedExpression],
    orderSpec: Seq[SortOrder],
    readOrder: Seq[SortOrder],
    input: Seq[Attribute],
    maxRangeEdgeRows: Int)
    extends Serializable {

  private val functions = splitFunctions.collect { case f: SplitFunction => f }
  private val offsets = new SplitOffsets(splitFunctions.collect { case o: SplitOffset => o }, input)
  private val sliding =
    new SplitSlidingFrames(splitFunctions.collect { case s: SplitSlidingAggregate => s }, input)
  private val ranged = new SplitRangeFrames(
    splitFunctions.collect { case r: SplitRangeAggregate => r },
    orderSpec,
    input,
    maxRangeEdgeRows)

  private val nthFunctions = functions.filter(_.function.isInstanceOf[NthValue])
  private val nths =
    new SplitNthValues(nthFunctions.map(_.function.asInstanceOf[NthValue]), input)
  private val aggregates = functions.filterNot(f => ranking(f.function) || nthFunctions.contains(f))
  private val running = functions.filter(_.frame != SplitFrame.Whole)
  private val whole = functions.filter(_.frame == SplitFrame.Whole)

  /** Per aggregate, what a split's partial buffer holds: Spark's function, or a wrapping sum. */
  private val partials: Seq[DeclarativeAggregate] = aggregates.map(_.function match {
    case s: Sum
        if s.child.dataType.isInstanceOf[IntegralType] && EvalModes.of(s) != EvalMode.LEGACY =>
      WrappingLongSum(s.child)
    case other => other
  })
  private val partialBuffer = partials.flatMap(_.aggBufferAttributes)

  /**
   * Whether a key of `rows` rows can be split: ranks and `n` are ints in Spark's window, so a
   * key of more than `maxRankedRows` (Spark's largest int) with a ranking function is left to
   * Spark's window (whatever Spark does with it).
   */
  def splits(rows: Long, maxRankedRows: Long): Boolean =
    rows <= maxRankedRows || !functions.exists(f => ranking(f.function))

  /**
   * Whether a key's splits (their `summaries`, in order) compute exactly what Spark's window
   * does: its bounded RANGE frames' bounds never moved back and reach few enough rows across
   * each edge ([[SplitRangeFrames.exact]]). Otherwise the key runs in Spark's window.
   */
  def exact(summaries: Seq[SplitSummary]): Boolean =
    ranged.isEmpty || ranged.exact(summaries.map(_.ranges))

  /** dense_rank needs the peer groups before a split and the last order values. */
  private val needsPeers: Boolean = functions.exists(_.function.isInstanceOf[DenseRank])

  /**
   * Whether a split's summary reads its rows in the window's order (as its evaluation does):
   * for dense_rank's peer groups, first / last values over an order, nth values (the first n of
   * a split, with or without an order), and bounded ROWS and RANGE frames. Other summaries
   * merge in any order (lag and lead's edge rows are picked by the total order, [[totalOrder]]).
   */
  val summarizesInOrder: Boolean =
    needsPeers || !sliding.isEmpty || !ranged.isEmpty ||
      nthFunctions.nonEmpty ||
      orderSpec.nonEmpty && functions.exists(_.function match {
        case _: First | _: Last => true
        case _ => false
      })

  /**
   * Whether a split's rows must be evaluated in a total order, [[totalOrder]] (`readOrder`, then
   * their bytes), the same whatever order they arrive in: when its summary reads them in order,
   * or picks lag and lead's edge rows by that order.
   */
  val evaluatesInTotalOrder: Boolean = summarizesInOrder || !offsets.isEmpty

  /** The rows a split's summary keeps at its edges for lag and lead. */
  def edgeRows: Int = offsets.edgeRows

  /**
   * The total order of a split's rows: `readOrder` (the sort it is read in), then the bytes.
   * Made once where it is used (each task deserializes its own copy of these functions).
   */
  @transient private lazy val totalOrder: Ordering[InternalRow] =
    ExternalSorts.totalOrdering(readOrder, input)

  /**
   * Whether every function reads its key's whole partition and no summary reads rows in order:
   * then a key's values are its summaries merged in any order, and every row of the key gets
   * them ([[withWholeValues]]).
   */
  val wholeValuesOnly: Boolean =
    running.isEmpty && offsets.isEmpty && sliding.isEmpty && ranged.isEmpty && !summarizesInOrder

  private def ranking(f: DeclarativeAggregate): Boolean = f match {
    case _: RowNumberLike | _: RankLike => true
    case _ => false
  }

  /** One split's summary from its rows, in the window's order when [[summarizesInOrder]]. */
  def summarize(rows: Iterator[InternalRow]): SplitSummary = {
    val summary = new Summarizers().newSplit()
    rows.foreach(summary.add)
    summary.result
  }

  /**
   * The summarizers of one task and the generated code they share, made once: a routing map task
   * summarizes every split it routes rows to, and code made for each would cost more than the
   * rows it reads.
   */
  final class Summarizers {
    private val initial = MutableProjection.create(partials.flatMap(_.initialValues))
    private[SplitWindowFunctions] val update =
      MutableProjection.create(partials.flatMap(_.updateExpressions), partialBuffer ++ input)
    private[SplitWindowFunctions] val orderOf =
      UnsafeProjection.create(orderSpec.map(_.child), input)
    private[SplitWindowFunctions] val ordering = RowOrdering.create(orderSpec, input)

    def newSplit(): Summarizer = new Summarizer(this, emptyPartials(initial))
  }

  /** A split's summary built a row at a time (the rows are not kept, but for dense_rank). */
  final class Summarizer private[SplitWindowFunctions] (shared: Summarizers, buffer: InternalRow)
      extends SplitSummarizer[SplitSummary] {
    private val join = new JoinedRow(buffer, null)
    private var count = 0L
    private var peers = 0L
    private var groupStart: InternalRow = null // the first row of the current peer group, copied
    private val halo = if (offsets.isEmpty) None else Some(new offsets.Halo(totalOrder))
    private val head = if (nthFunctions.isEmpty) None else Some(new nths.Head)
    private val frames = if (sliding.isEmpty) None else Some(new sliding.Halo)
    private val rangeEdges = if (ranged.isEmpty) None else Some(new ranged.Halo)

    override def add(row: InternalRow): Unit = {
      if (partials.nonEmpty) shared.update.target(buffer)(join.withRight(row))
      halo.foreach(_.add(row))
      head.foreach(_.add(row))
      frames.foreach(_.add(row))
      rangeEdges.foreach(_.add(row))
      if (needsPeers && (groupStart == null || shared.ordering.compare(groupStart, row) != 0)) {
        peers += 1
        groupStart = row.copy()
      }
      count += 1
    }

    // The last peer group's order values (its rows are equal in the window's order).
    override def result: SplitSummary = SplitSummary(
      count,
      peers,
      Option(groupStart).map(shared.orderOf(_).copy()),
      buffer.copy(),
      halo.fold(Seq.empty[IndexedSeq[UnsafeRow]])(_.result),
      head.fold(Seq.empty[(Long, IndexedSeq[UnsafeRow])])(_.result),
      frames.fold(SplitSlidingFrames.Empty)(_.result),
      rangeEdges.fold(SplitRangeFrames.Empty)(_.result))
  }

  /**
   * A split's summary from the summaries of parts of its rows, when summaries read no order (not
   * [[summarizesInOrder]]): the rows added, the partial buffers merged (in `parts`' order), lag
   * and lead's edge rows picked from the parts'.
   */
  def merge(parts: Seq[SplitSummary]): SplitSummary = {
    require(!summarizesInOrder, "summaries read in order are made from a whole split")
    val merged = emptyPartials()
    val mergePart = merger(merged)
    parts.foreach(part => mergePart(new JoinedRow(merged, part.partial)))
    SplitSummary(
      parts.map(_.rows).sum,
      0L,
      None,
      merged.copy(),
      if (offsets.isEmpty) Nil else offsets.merge(parts.map(_.halo), totalOrder),
      Nil,
      SplitSlidingFrames.Empty,
      SplitRangeFrames.Empty)
  }

  /** The partial buffers' initial values (from `initial`, their projection). */
  private def emptyPartials(
      initial: MutableProjection = MutableProjection.create(partials.flatMap(_.initialValues)))
      : SpecificInternalRow = {
    val buffer = new SpecificInternalRow(partialBuffer.map(_.dataType))
    initial.target(buffer)(InternalRow.empty)
    buffer
  }

  /** Spark's merge of a partial buffer (joined after `target`'s) into `target`. */
  private def merger(target: InternalRow): MutableProjection = MutableProjection.create(
    partials.flatMap(_.mergeExpressions),
    partialBuffer ++ partials.flatMap(_.inputAggBufferAttributes)).target(target)

  /**
   * Per split of one key (in order): its seed, its running functions' in Spark's buffers
   * ([[runningBuffer]]'s layout). And the key's whole-partition values, in `whole`'s order, then
   * the key's rows (the `n` of cume_dist and percent_rank, an int as in Spark's window).
   */
  def seeds(splits: Seq[SplitSummary]): (Seq[SplitSeed], InternalRow) = {
    val merged = emptyPartials()
    val merge = merger(merged)
    val total = splits.map(_.rows).sum
    var rowsBefore = 0L
    var peersBefore = 0L
    var lastOrder: Option[UnsafeRow] = None
    val (nthSeeds, nthValues) = nths.seeds(splits.map(_.heads))
    val seeds = splits.indices.map { i =>
      val split = splits(i)
      val seed = runningSeed(merged, total, rowsBefore, peersBefore, lastOrder, nthSeeds(i))
      merge(new JoinedRow(merged, split.partial))
      rowsBefore += split.rows
      peersBefore += split.peerGroups
      if (split.lastOrder.isDefined) lastOrder = split.lastOrder
      seed
    }
    val evaluated = whole.filter(aggregates.contains)
    val values = MutableProjection.create(
      evaluated.map(f => partials(aggregates.indexOf(f)).evaluateExpression),
      partialBuffer)(merged)
    val keyValues = whole.map { f =>
      if (nthFunctions.contains(f)) nthValues(nthFunctions.indexOf(f))
      else values.get(evaluated.indexOf(f), f.dataType)
    } :+ rowsBefore.toInt
    val offsetSeeds =
      if (offsets.isEmpty) splits.map(_ => Nil) else offsets.seeds(splits.map(_.halo))
    val frameSeeds =
      if (sliding.isEmpty) splits.map(_ => SplitSlidingFrames.Empty)
      else sliding.seeds(splits.map(_.frames))
    val rangeSeeds =
      if (ranged.isEmpty) splits.map(_ => SplitRangeFrames.Empty)
      else ranged.seeds(splits.map(_.ranges))
    (
      splits.indices.map(i => SplitSeed(seeds(i), offsetSeeds(i), frameSeeds(i), rangeSeeds(i))),
      new GenericInternalRow(keyValues.toArray[Any]))
  }

  private val runningBuffer = running.flatMap(_.function.aggBufferAttributes)

  /** The running functions' buffers after the rows before a split. */
  private def runningSeed(
      merged: InternalRow,
      total: Long,
      rowsBefore: Long,
      peersBefore: Long,
      lastOrder: Option[UnsafeRow],
      nthBuffers: Seq[Seq[Any]]): InternalRow = {
    val offsets = partials.scanLeft(0)(_ + _.aggBufferAttributes.size)
    val values = running.flatMap { f =>
      val buffer = f.function.aggBufferAttributes
      f.function match {
        // Spark's buffers (windowExpressions.scala): row_number (rowNumber); rank (rank,
        // rowNumber, the order values); dense_rank (rank, the order values).
        case t: NTile => NTileSeed.after(rowsBefore, total, t.buckets.eval().asInstanceOf[Int])
        case _: RowNumberLike => Seq(rowsBefore.toInt) // row_number, cume_dist
        case _: DenseRank =>
          peersBefore.toInt +: buffer.indices.tail.map { j =>
            lastOrder.fold(null: Any)(_.get(j - 1, buffer(j).dataType))
          }
        case _: RankLike => // rank, percent_rank
          // rank 0 makes the split's first row take its row number as rank.
          Seq(0, (rowsBefore + 1).toInt) ++ buffer.drop(2).map(_ => null)
        case _: NthValue => nthBuffers(nthFunctions.indexWhere(_ eq f)) // (result, count)
        case _ =>
          val i = aggregates.indexWhere(_ eq f)
          // A wrapping sum's first field is Spark's sum buffer (integral sums have no other).
          buffer.indices.map(j => merged.get(offsets(i) + j, buffer(j).dataType))
      }
    }
    new GenericInternalRow(values.toArray[Any])
  }

  private lazy val resultAttributes = functions.map(f =>
    AttributeReference("window_result", f.dataType, f.expression.nullable)())

  /**
   * A split's rows with the window's results: `rows` in the window's order, one key's, seeded
   * with `seed` and the key's `keyValues` ([[seeds]]).
   */
  def evaluate(
      inputRows: Iterator[InternalRow],
      seed: SplitSeed,
      keyValues: InternalRow,
      peerBuffer: PeerBuffer): Iterator[InternalRow] = {
    // Rows with their lag / lead results, then their bounded ROWS and RANGE frames' results,
    // after the input.
    val lagged =
      if (offsets.isEmpty) inputRows
      else offsets.evaluate(inputRows, input, seed.offsets, peerBuffer)
    val slid =
      if (sliding.isEmpty) lagged
      else sliding.evaluate(lagged, input ++ offsets.resultAttributes, seed.frames)
    val rows =
      if (ranged.isEmpty) slid
      else {
        val attributes = input ++ offsets.resultAttributes ++ sliding.resultAttributes
        ranged.evaluate(slid, attributes, seed.ranges)
      }
    val rowsFrame = running.filter(_.frame == SplitFrame.RunningRows)
    val rangeFrame = running.filter(_.frame == SplitFrame.RunningRange)
    val buffer = new SpecificInternalRow(runningBuffer.map(_.dataType))
    runningBuffer.indices.foreach { i =>
      buffer.update(i, seed.running.get(i, runningBuffer(i).dataType))
    }
    def updater(group: Seq[SplitFunction]) = if (group.isEmpty) None
    else {
      // Each function's update writes its own buffer fields; the others are kept as they are.
      val kept = runningBuffer.map(a => a: Expression).toArray
      group.foreach { f =>
        val start = runningBuffer.indexWhere(_ eq f.function.aggBufferAttributes.head)
        f.function.updateExpressions.zipWithIndex.foreach { case (e, j) => kept(start + j) = e }
      }
      Some(MutableProjection.create(kept.toSeq, runningBuffer ++ input).target(buffer))
    }
    val updateRows = updater(rowsFrame)
    val updateRange = updater(rangeFrame)
    val wholeAttributes = whole.map(f =>
      AttributeReference("whole", f.dataType, f.expression.nullable)())
    val results = new SpecificInternalRow(functions.map(_.dataType))
    val evaluateAll = MutableProjection.create(
      functions.map { f =>
        if (f.frame == SplitFrame.Whole) wholeAttributes(whole.indexOf(f))
        else f.function.evaluateExpression
      },
      (wholeAttributes :+ SizeBasedWindowFunction.n) ++ runningBuffer).target(results)
    val evaluationInput = new JoinedRow(keyValues, buffer)
    val join = new JoinedRow(buffer, null)
    val output = resultProjection()
    val withResults = new JoinedRow()
    def emit(row: InternalRow): InternalRow = {
      updateRows.foreach(_(join.withRight(row)))
      evaluateAll(evaluationInput)
      output(withResults(row, results))
    }
    updateRange match {
      case None => rows.map(emit)
      case Some(update) =>
        val group = peerBuffer.create()
        TaskContext.get().addTaskCompletionListener[Unit](_ => group.clear())
        peerGroups(rows, group).flatMap { _ =>
          group.generateIterator().foreach(row => update(join.withRight(row)))
          group.generateIterator().map(emit)
        }
    }
  }

  /**
   * When [[wholeValuesOnly]]: a row's output from its key's values ([[seeds]]), built once per
   * task.
   */
  def withWholeValues(): (InternalRow, InternalRow) => InternalRow = {
    val output = resultProjection() // (results in `whole`'s order, as the key's values)
    val withValues = new JoinedRow()
    (row, keyValues) => output(withValues(row, keyValues))
  }

  /**
   * Consecutive rows equal in the window's order (a RANGE frame's peers), each group in turn
   * held in `group` (spillable, as Spark's window holds a partition).
   */
  private def peerGroups(
      rows: Iterator[InternalRow],
      group: ExternalAppendOnlyUnsafeRowArray): Iterator[Unit] = {
    val ordering = RowOrdering.create(orderSpec, input)
    val ahead = rows.buffered
    new Iterator[Unit] {
      override def hasNext: Boolean = ahead.hasNext
      override def next(): Unit = {
        group.clear()
        val first = ahead.next().asInstanceOf[UnsafeRow].copy()
        group.add(first)
        while (ahead.hasNext && ordering.compare(first, ahead.head) == 0) {
          group.add(ahead.next().asInstanceOf[UnsafeRow])
        }
      }
    }
  }

  /**
   * The window's output row (as WindowExec's) from a row with its lag / lead results, its
   * bounded frames' results and the other functions' results.
   */
  private def resultProjection(): UnsafeProjection = {
    val byExpression = functions.map(_.expression).zip(resultAttributes).toMap ++
      offsets.results ++ sliding.results ++ ranged.results
    val patched = windowExpression.map(_.transform {
      case w: WindowExpression if byExpression.contains(w) => byExpression(w)
    })
    UnsafeProjection.create(
      input ++ patched,
      input ++ offsets.resultAttributes ++ sliding.resultAttributes ++ ranged.resultAttributes ++
        resultAttributes)
  }
}
