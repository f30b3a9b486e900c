package org.apache.spark.sql.skewagg.window

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute, BoundReference, JoinedRow, RowOrdering, SortOrder, UnsafeProjection, UnsafeRow
}

/**
 * The aggregates of a split key over bounded RANGE frames ([[SplitRangeAggregate]]: the rows whose
 * order value lies between the current row's bounds, e.g. the last 7 days' `RANGE BETWEEN
 * INTERVAL 7 DAYS PRECEDING AND CURRENT ROW`).
 *
 * Shape: a bound is the current row's order values (CURRENT ROW) or its order value plus an
 * offset, as Spark's window adds them ([[RangeFrameBound]]). The rows are in the window's order
 * and the bounds never move back, so the rows of a split that frames of later splits reach are
 * its last rows at or above its last row's lowest lower bound, and those that frames of earlier
 * splits reach are its first rows at or below its first row's highest upper bound: each split
 * keeps them ([[Halo]]). The driver gives each split the edge rows of the splits before and
 * after it, walking on past a split whose edge is all its rows ([[seeds]]). A split then reads
 * its rows between its seed's, finds each row's frame by comparing order values with its bounds,
 * and aggregates it from scratch ([[FrameAggregates]], as Spark's sliding frame).
 *
 * Rule: exact while the bounds never move back in the window's order (an integral bound that
 * wraps around on overflow may) and each split's frames reach at most `maxEdgeRows` rows across
 * an edge; the summaries record where either fails, and [[exact]] is false for that key, which
 * then runs in Spark's window.
 */
final class SplitRangeFrames(
    functions: Seq[SplitRangeAggregate],
    orderSpec: Seq[SortOrder],
    input: Seq[Attribute],
    maxEdgeRows: Int)
    extends BoundedFrames(functions, input) {

  import SplitRangeFrames._

  private def orderValues(): UnsafeProjection =
    UnsafeProjection.create(orderSpec.map(_.child), input)

  /** The window's order on order values (a bound with an offset: the one ORDER BY value). */
  private def ordering(): Ordering[InternalRow] = RowOrdering.create(
    orderSpec.zipWithIndex.map { case (o, i) =>
      o.copy(child = BoundReference(i, o.dataType, nullable = true))
    },
    Nil)

  /** A row's bounds, every function's lower then upper, from the row and its order values. */
  private final class Bounds {
    private val projections = functions.flatMap(f => Seq(f.lower, f.upper)).map(_.map { bound =>
      UnsafeProjection.create(Seq(bound), input)
    }).toArray

    def of(row: InternalRow, order: UnsafeRow): IndexedSeq[UnsafeRow] = {
      val bounds = new Array[UnsafeRow](projections.length)
      var i = 0
      while (i < bounds.length) {
        bounds(i) = projections(i).fold(order)(bound => bound(row).copy())
        i += 1
      }
      bounds.toIndexedSeq
    }
  }

  private def lowers(bounds: IndexedSeq[UnsafeRow]): Seq[UnsafeRow] =
    functions.indices.map(i => bounds(2 * i))

  private def uppers(bounds: IndexedSeq[UnsafeRow]): Seq[UnsafeRow] =
    functions.indices.map(i => bounds(2 * i + 1))

  /** A split's edges from its rows in order: the rows frames beyond it reach, and its bounds. */
  final class Halo {
    private val readOf = reading()
    private val orderOf = orderValues()
    private val bounds = new Bounds
    private val order = ordering()
    private val first = new EdgeRows
    private var firstOpen = true // the split's rows so far are all within its first's reach
    private val last = mutable.Queue.empty[(UnsafeRow, UnsafeRow)]
    private var firstBounds: IndexedSeq[UnsafeRow] = IndexedSeq.empty
    private var previous: IndexedSeq[UnsafeRow] = IndexedSeq.empty
    private var rows = 0L
    private var exact = true

    def add(row: InternalRow): Unit = if (exact) {
      val values = orderOf(row).copy()
      val current = bounds.of(row, values)
      if (previous.nonEmpty && previous.indices.exists(i =>
          order.compare(previous(i), current(i)) > 0)) {
        exact = false // (a bound moved back)
      }
      if (rows == 0) firstBounds = current
      if (firstOpen) {
        if (uppers(firstBounds).exists(order.compare(values, _) <= 0)) {
          first.add(readOf(row).copy(), values)
        } else firstOpen = false
      }
      last.enqueue((readOf(row).copy(), values))
      val lower = lowers(current)
      while (last.nonEmpty && lower.forall(order.compare(last.head._2, _) < 0)) last.dequeue()
      if (first.size > maxEdgeRows || last.size > maxEdgeRows) exact = false
      previous = current
      rows += 1
    }

    def result: Edges =
      if (!exact) Inexact
      else {
        val lastRows = new EdgeRows
        last.foreach { case (values, order) => lastRows.add(values, order) }
        Edges(
          first,
          lastRows,
          firstWhole = first.size == rows,
          lastWhole = last.size == rows,
          firstBounds,
          previous,
          exact = true)
      }
  }

  /**
   * Whether the splits of one key (their `edges`, in order) are exact: each split's, and the
   * bounds never move back from one split to the next.
   */
  def exact(edges: Seq[Edges]): Boolean = {
    val order = ordering()
    val filled = edges.filter(_.lastBounds.nonEmpty)
    edges.forall(_.exact) && filled.zip(filled.drop(1)).forall { case (a, b) =>
      a.lastBounds.indices.forall(i => order.compare(a.lastBounds(i), b.firstBounds(i)) <= 0)
    } && seeds(edges).forall(s => s.first.size <= maxEdgeRows && s.last.size <= maxEdgeRows)
  }

  /**
   * Per split of one key (in order): the rows its frames may reach beyond it, `last` those of
   * the splits before it and `first` those after, from the splits' `edges` (in order, [[exact]]).
   */
  def seeds(edges: Seq[Edges]): Seq[Edges] = edges.indices.map { i =>
    val before = new EdgeRows
    val beforeSplits = edges.take(i).reverse
    val reached = beforeSplits.indexWhere(!_.lastWhole) // (splits before it are out of reach)
    (if (reached < 0) beforeSplits else beforeSplits.take(reached + 1)).reverse
      .foreach(e => before.addAll(e.last))
    val after = new EdgeRows
    val afterSplits = edges.drop(i + 1)
    val reachedAfter = afterSplits.indexWhere(!_.firstWhole)
    (if (reachedAfter < 0) afterSplits else afterSplits.take(reachedAfter + 1))
      .foreach(e => after.addAll(e.first))
    Edges(
      after,
      before,
      firstWhole = false,
      lastWhole = false,
      IndexedSeq.empty,
      IndexedSeq.empty,
      exact = true)
  }

  /**
   * A split's rows (in the halos' order, the input then any columns: `rowAttributes`) followed
   * by the functions' results, as unsafe rows: `seed` holds the rows before it (`last`) and
   * after it (`first`).
   */
  def evaluate(
      rows: Iterator[InternalRow],
      rowAttributes: Seq[Attribute],
      seed: Edges): Iterator[InternalRow] = {
    val readOf = reading()
    val orderOf = orderValues()
    val bounds = new Bounds
    val order = ordering()
    val aggregates = this.aggregates()
    // The rows read (the seed's before the split's, then the seed's after them once the split's
    // are all read): entry i of `frameReads` and `frameOrders` is row `start + i` of that stream.
    // Each function's frame for the last row output is rows `firsts(j)` to `lasts(j)` (absolute).
    val frameReads = mutable.ArrayBuffer.empty[UnsafeRow] ++= seed.last.reads
    val frameOrders = mutable.ArrayBuffer.empty[UnsafeRow] ++= seed.last.orders
    var start = 0L
    val firsts = Array.fill(functions.size)(0L)
    val lasts = Array.fill(functions.size)(-1L)
    val computed = Array.fill(functions.size)((-1L, -2L)) // (from, to) of each function's result
    // The split's rows waiting for their frames, with their bounds (made once per row).
    val held = mutable.Queue.empty[(UnsafeRow, IndexedSeq[UnsafeRow])]
    val withResults = new JoinedRow()
    val output =
      UnsafeProjection.create((rowAttributes ++ resultAttributes).map(_.dataType).toArray)
    new Iterator[InternalRow] {
      private var endsRead = false // the seed's rows after the split are in the frame rows
      private def end: Long = start + frameReads.size // (one past the last row read)

      // Reads until every frame of the next row is read: a row beyond its upper bounds, or the end.
      private def fill(): Unit = {
        def reachesFurther: Boolean = held.isEmpty || {
          val limits = held.head._2
          var j = 1
          while (j < limits.size && order.compare(frameOrders.last, limits(j)) > 0) j += 2
          j < limits.size // (a function's upper bound, odd entries, not passed yet)
        }
        while (rows.hasNext && reachesFurther) {
          val row = rows.next()
          val values = orderOf(row).copy()
          held.enqueue((row.asInstanceOf[UnsafeRow].copy(), bounds.of(row, values)))
          frameReads += readOf(row).copy()
          frameOrders += values
        }
        if (!rows.hasNext && !endsRead) {
          frameReads ++= seed.first.reads
          frameOrders ++= seed.first.orders
          endsRead = true
        }
      }

      override def hasNext: Boolean = { fill(); held.nonEmpty }

      override def next(): InternalRow = {
        fill()
        val (row, current) = held.dequeue()
        def orderAt(i: Long): UnsafeRow = frameOrders((i - start).toInt)
        functions.indices.foreach { j =>
          val (lower, upper) = (current(2 * j), current(2 * j + 1))
          while (firsts(j) < end && order.compare(orderAt(firsts(j)), lower) < 0) firsts(j) += 1
          lasts(j) = math.max(lasts(j), firsts(j) - 1)
          while (lasts(j) + 1 < end && order.compare(orderAt(lasts(j) + 1), upper) <= 0) {
            lasts(j) += 1
          }
          if (computed(j) != ((firsts(j), lasts(j)))) { // (an unchanged frame keeps its result)
            val (first, last) = ((firsts(j) - start).toInt, (lasts(j) - start).toInt)
            aggregates.aggregate(j, frameReads, first, last)
            computed(j) = (firsts(j), lasts(j))
          }
        }
        // Keep the rows the next row's frames may reach back to.
        val drop = (firsts.min - start).toInt
        if (drop > 1024) {
          frameReads.remove(0, drop)
          frameOrders.remove(0, drop)
          start += drop
        }
        output(withResults(row, aggregates.results))
      }
    }
  }
}

object SplitRangeFrames {

  /** Rows at a split's edge: the columns the aggregates read, and their order values. */
  final class EdgeRows extends Serializable {
    val reads: mutable.ArrayBuffer[UnsafeRow] = mutable.ArrayBuffer.empty
    val orders: mutable.ArrayBuffer[UnsafeRow] = mutable.ArrayBuffer.empty

    def size: Int = reads.size

    def add(values: UnsafeRow, order: UnsafeRow): Unit = {
      reads += values
      orders += order
    }

    def addAll(rows: EdgeRows): Unit = {
      reads ++= rows.reads
      orders ++= rows.orders
    }
  }

  /**
   * A split's edges: its `first` and `last` rows that frames beyond it reach (whether each is
   * all its rows), and its first and last rows' bounds; or a seed: the rows before it (`last`)
   * and after it (`first`). Not `exact`: a bound moved back, or an edge held too many rows.
   */
  final case class Edges(
      first: EdgeRows,
      last: EdgeRows,
      firstWhole: Boolean,
      lastWhole: Boolean,
      firstBounds: IndexedSeq[UnsafeRow],
      lastBounds: IndexedSeq[UnsafeRow],
      exact: Boolean)

  val Empty: Edges =
    Edges(new EdgeRows, new EdgeRows, true, true, IndexedSeq.empty, IndexedSeq.empty, exact = true)

  private val Inexact: Edges = Empty.copy(exact = false)
}
