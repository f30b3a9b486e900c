package org.apache.spark.sql.skewagg.window

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, JoinedRow, UnsafeProjection, UnsafeRow}

/**
 * The aggregates of a split key over bounded ROWS frames ([[SplitSlidingAggregate]]: from `lower`
 * to `upper` rows of the current one, e.g. a moving average over the last 7 rows).
 *
 * Shape: a row's frame reaches at most [[before]] rows back and [[after]] rows ahead, so each
 * split keeps its halo ([[Halo]]): the columns the aggregates read of its first [[after]] and
 * last [[before]] rows. The driver cuts each split's seed from the halos of the splits before
 * and after it ([[seeds]]). A split then reads its rows between the seed's rows before and after
 * them, and aggregates each row's frame from scratch, in order ([[FrameAggregates]], as Spark's
 * sliding frame: its results to the last bit).
 *
 * Rule: the halos and the evaluation read a split's rows in one (total) order.
 */
final class SplitSlidingFrames(functions: Seq[SplitSlidingAggregate], input: Seq[Attribute])
    extends BoundedFrames(functions, input) {

  /** The rows a frame reaches before and after its row (at most `WindowSplitSupport.MaxOffset`). */
  val before: Int = (0 +: functions.map(-_.lower)).max
  val after: Int = (0 +: functions.map(_.upper)).max

  /** A split's halo from its rows in order: its first [[after]] and last [[before]] rows read. */
  final class Halo {
    private val project = reading()
    private val first = mutable.ArrayBuffer.empty[UnsafeRow]
    private val last = new LastRows(before)

    def add(row: InternalRow): Unit = {
      val values = project(row)
      if (first.size < after) first += values.copy()
      last.add(values)
    }

    def result: SplitSlidingFrames.Edges =
      SplitSlidingFrames.Edges(first.toIndexedSeq, last.oldestFirst)
  }

  /**
   * Per split of one key (in order): the rows its frames reach before and after it, from the
   * splits' `halos` (in order).
   */
  def seeds(halos: Seq[SplitSlidingFrames.Edges]): Seq[SplitSlidingFrames.Edges] = {
    val preceding = SplitEdges.before(halos.map(_.last), before)
    val following = SplitEdges.after(halos.map(_.first), after)
    halos.indices.map(i => SplitSlidingFrames.Edges(first = following(i), last = preceding(i)))
  }

  /**
   * A split's rows (in the halos' order, the input then any columns: `rowAttributes`) followed
   * by the functions' results, as unsafe rows: `seed` holds the rows before it (`last`) and
   * after it (`first`).
   */
  def evaluate(
      rows: Iterator[InternalRow],
      rowAttributes: Seq[Attribute],
      seed: SplitSlidingFrames.Edges): Iterator[InternalRow] = {
    val project = reading()
    val aggregates = this.aggregates()
    // The rows read (the seed's before the split's, then the seed's after them once the split's
    // are all read): `frameRows(i)` is row `start + i` of that stream, whose row `position` is
    // the split's next row to output. Rows no frame can reach any more are dropped in batches.
    val frameRows = mutable.ArrayBuffer.empty[UnsafeRow]
    frameRows ++= seed.last
    var start = 0L
    var split = 0L // the split's rows read
    val held = mutable.Queue.empty[UnsafeRow] // the split's rows waiting for their frames
    var position = seed.last.size.toLong // the row of `held.head`
    val withResults = new JoinedRow()
    val output =
      UnsafeProjection.create((rowAttributes ++ resultAttributes).map(_.dataType).toArray)
    def readRow(): Unit = {
      val row = rows.next()
      held.enqueue(row.asInstanceOf[UnsafeRow].copy())
      frameRows += project(row).copy()
      split += 1
    }
    new Iterator[InternalRow] {
      private var endsRead = false // the seed's rows after the split are in `frameRows`
      // Reads until the next row's frames are all read: `after` rows past it, or the split's end.
      private def fill(): Unit = {
        def readPast = seed.last.size + split - 1 - position // (read rows after the next row)
        while (rows.hasNext && (held.isEmpty || readPast < after)) {
          readRow()
        }
        if (!rows.hasNext && !endsRead) {
          frameRows ++= seed.first
          endsRead = true
        }
      }

      override def hasNext: Boolean = { fill(); held.nonEmpty }

      override def next(): InternalRow = {
        fill()
        val row = held.dequeue()
        val end = start + frameRows.size // (one past the last row read)
        functions.indices.foreach { j =>
          val f = functions(j)
          val from = math.max(start, position + f.lower)
          val to = math.min(end - 1, position + f.upper)
          aggregates.aggregate(j, frameRows, (from - start).toInt, (to - start).toInt)
        }
        position += 1
        // Keep the rows the next row's frames may reach back to.
        val drop = (position - before - start).toInt
        if (drop > 1024) {
          frameRows.remove(0, drop)
          start += drop
        }
        output(withResults(row, aggregates.results))
      }
    }
  }
}

object SplitSlidingFrames {

  /** Rows read by the aggregates: a split's `first` and `last`, or a seed's after and before. */
  final case class Edges(first: IndexedSeq[UnsafeRow], last: IndexedSeq[UnsafeRow])

  val Empty: Edges = Edges(IndexedSeq.empty, IndexedSeq.empty)
}
