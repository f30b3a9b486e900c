package org.apache.spark.sql.skewagg.window

import scala.collection.mutable

import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute, AttributeReference, Expression, If, JoinedRow, Literal, SpecificInternalRow,
  UnsafeProjection, UnsafeRow, WindowExpression
}
import org.apache.spark.sql.types.BooleanType

/**
 * The lag and lead functions of a split key ([[SplitOffset]]).
 *
 * Shape: each split keeps its halo ([[Halo]]): per function, its last (lag) or first (lead)
 * counted rows, as many as the function reaches (counted: every row, or with IGNORE NULLS the
 * rows whose input is not null), found in any order (the routing map tasks keep each one's
 * share, [[merge]]d on the driver). The driver cuts each split's seed from the
 * halos of the splits before it (lag) or after it (lead) ([[seeds]]). A split's rows then read
 * the rows before them from the last counted inputs, started with the seed, and the rows after
 * them by being held until enough rows follow; the split's last rows complete theirs from the
 * seed ([[evaluate]]). With lead IGNORE NULLS the rows that follow until enough inputs are not
 * null are not bounded in number: the split's rows are then held in Spark's spillable buffer
 * (as Spark's window holds a partition), and each lead reads ahead of the current row in it. A
 * row without its offset row takes its default, as in Spark's window.
 *
 * Rule: the halos pick by the total order a split's rows are evaluated in (its sort, then the
 * rows' bytes: `ExternalSorts.totalOrdering`), so a row's neighbours across a split boundary
 * are the rows its neighbouring split put at its edge.
 */
final class SplitOffsets(offsets: Seq[SplitOffset], input: Seq[Attribute]) extends Serializable {

  private val lags = offsets.indices.filter(offsets(_).offset < 0)
  private val leads = offsets.indices.filter(offsets(_).offset > 0)
  private val reach = offsets.map(o => math.abs(o.offset))

  /** The functions' results, lags then leads, after the input in [[evaluate]]'s rows. */
  val resultAttributes: Seq[Attribute] =
    (lags ++ leads).map(i => AttributeReference("offset_result", offsets(i).dataType)())

  /** The result attribute of each of the window's lag / lead expressions. */
  def results: Map[WindowExpression, Attribute] =
    (lags ++ leads).map(offsets(_).expression).zip(resultAttributes).toMap

  def isEmpty: Boolean = offsets.isEmpty

  /** The rows a split's halo keeps: each function's reach. */
  def edgeRows: Int = reach.sum

  /** Every function's input, in `offsets`' order. */
  private def inputs(): UnsafeProjection = UnsafeProjection.create(offsets.map(_.input), input)

  private def counted(i: Int, inputs: InternalRow): Boolean =
    !offsets(i).ignoreNulls || !inputs.isNullAt(i)

  /**
   * A split's halo, from its rows in any order (a routing map task's share of them, or the whole
   * split): per function, its last (lag) or first (lead) counted rows by `ordering`, the total
   * order the split's rows are evaluated in, as many as the function reaches; whole rows, in
   * that order.
   */
  final class Halo(ordering: Ordering[InternalRow]) {
    private val project = if (offsets.exists(_.ignoreNulls)) Some(inputs()) else None
    private val edges = offsets.indices.map(i => new EdgeRows(reach(i), lags.contains(i), ordering))

    def add(row: InternalRow): Unit = {
      val values = project.map(_(row)).orNull
      offsets.indices.foreach { i =>
        if (values == null || counted(i, values)) edges(i).add(row.asInstanceOf[UnsafeRow])
      }
    }

    def result: Seq[IndexedSeq[UnsafeRow]] = edges.map(_.inOrder)
  }

  /** A split's halo from the halos of parts of its rows ([[Halo]]s by the same `ordering`). */
  def merge(
      parts: Seq[Seq[IndexedSeq[UnsafeRow]]],
      ordering: Ordering[InternalRow]): Seq[IndexedSeq[UnsafeRow]] =
    offsets.indices.map { i =>
      val rows = parts.flatMap(_(i)).sorted(ordering).toIndexedSeq
      if (lags.contains(i)) rows.takeRight(reach(i)) else rows.take(reach(i))
    }

  /**
   * Per split of one key (in order), per function: the inputs of the counted rows the split's
   * rows reach beyond it, from the splits' `halos` (in order).
   */
  def seeds(halos: Seq[Seq[IndexedSeq[UnsafeRow]]]): Seq[Seq[IndexedSeq[UnsafeRow]]] = {
    val project = inputs()
    val inputHalos = halos.map(_.map(_.map(project(_).copy())))
    val perFunction = offsets.indices.map { i =>
      if (lags.contains(i)) SplitEdges.before(inputHalos.map(_(i)), reach(i))
      else SplitEdges.after(inputHalos.map(_(i)), reach(i))
    }
    halos.indices.map(split => perFunction.map(_(split)))
  }

  /**
   * A split's rows (in the halos' order, with any columns after the input) followed by the
   * functions' results (lags, then leads): `seed` is the split's, from [[seeds]].
   */
  def evaluate(
      rows: Iterator[InternalRow],
      rowAttributes: Seq[Attribute],
      seed: Seq[IndexedSeq[UnsafeRow]],
      buffer: PeerBuffer): Iterator[InternalRow] = {
    val lagged = if (lags.isEmpty) rows else withLags(rows, rowAttributes, seed)
    val prefix = rowAttributes ++ resultAttributes.take(lags.size)
    if (leads.isEmpty) lagged
    else if (leads.exists(offsets(_).ignoreNulls)) withBufferedLeads(lagged, prefix, seed, buffer)
    else withLeads(lagged, prefix, seed)
  }

  /**
   * A projection of `prefix` followed by each of `functions`' result: the input found for it
   * (a picked row holds the found values, then whether each was found) or its default, evaluated
   * on the current row as Spark's window does.
   */
  private def picking(functions: Seq[Int], prefix: Seq[Attribute]): UnsafeProjection = {
    val values = functions.map(i => AttributeReference("found", offsets(i).dataType)())
    val found = functions.map(_ => AttributeReference("isFound", BooleanType)())
    val picked = functions.indices.map { j =>
      val function = offsets(functions(j)).function
      val default: Expression =
        if (function.default == null || function.default.foldable &&
          function.default.eval() == null) {
          Literal.create(null, function.dataType)
        } else function.default
      If(found(j), values(j), default)
    }
    UnsafeProjection.create(prefix ++ picked, prefix ++ values ++ found)
  }

  private def pickedRow(functions: Seq[Int]): SpecificInternalRow =
    new SpecificInternalRow(functions.map(offsets(_).dataType) ++ functions.map(_ => BooleanType))

  private def withLags(
      rows: Iterator[InternalRow],
      prefix: Seq[Attribute],
      seed: Seq[IndexedSeq[UnsafeRow]]): Iterator[InternalRow] = {
    val project = inputs()
    val before = lags.map { i =>
      val last = new LastRows(reach(i))
      seed(i).foreach(last.add)
      last
    }
    val picked = pickedRow(lags)
    val output = picking(lags, prefix)
    val join = new JoinedRow()
    rows.map { row =>
      val values = project(row)
      lags.indices.foreach { j =>
        val found = before(j).size == reach(lags(j))
        picked.setBoolean(lags.size + j, found)
        if (found) picked.update(j, before(j).oldest.get(lags(j), offsets(lags(j)).dataType))
        else picked.setNullAt(j)
      }
      val result = output(join(row, picked)) // (before the rows move on: it copies their values)
      lags.indices.foreach(j => if (counted(lags(j), values)) before(j).add(values))
      result
    }
  }

  /** Leads counting every row: a row waits for its reach. */
  private def withLeads(
      rows: Iterator[InternalRow],
      prefix: Seq[Attribute],
      seed: Seq[IndexedSeq[UnsafeRow]]): Iterator[InternalRow] = {
    val project = inputs()
    val farthest = leads.map(reach).max
    val held = mutable.Queue.empty[(UnsafeRow, UnsafeRow)] // a row, and its inputs
    val picked = pickedRow(leads)
    val output = picking(leads, prefix)
    val join = new JoinedRow()
    new Iterator[InternalRow] {
      private def fill(): Unit = while (held.size <= farthest && rows.hasNext) {
        val row = rows.next()
        held.enqueue((row.asInstanceOf[UnsafeRow].copy(), project(row).copy()))
      }

      override def hasNext: Boolean = { fill(); held.nonEmpty }

      override def next(): InternalRow = {
        fill()
        val (row, _) = held.dequeue()
        leads.indices.foreach { j =>
          val i = leads(j)
          val after = reach(i) - 1 // (held now starts right after the row)
          val value =
            if (after < held.size) Some(held(after)._2)
            else seed(i).lift(after - held.size)
          picked.setBoolean(leads.size + j, value.isDefined)
          value match {
            case Some(inputs) => picked.update(j, inputs.get(i, offsets(i).dataType))
            case None => picked.setNullAt(j)
          }
        }
        output(join(row, picked))
      }
    }
  }

  /**
   * Leads, some counting only non-null inputs: the split's rows held in a spillable buffer; per
   * lead, an iterator of that buffer ahead of the current row keeps the inputs of the next
   * counted rows after it (at most the lead's reach), the rest from the seed.
   */
  private def withBufferedLeads(
      rows: Iterator[InternalRow],
      prefix: Seq[Attribute],
      seed: Seq[IndexedSeq[UnsafeRow]],
      buffer: PeerBuffer): Iterator[InternalRow] = {
    val held = buffer.create()
    TaskContext.get().addTaskCompletionListener[Unit](_ => held.clear())
    rows.foreach(row => held.add(row.asInstanceOf[UnsafeRow]))
    val project = inputs()
    val picked = pickedRow(leads)
    val output = picking(leads, prefix)
    val join = new JoinedRow()
    val ahead = leads.map(_ => held.generateIterator())
    val read = Array.fill(leads.size)(0L) // rows each `ahead` iterator has passed
    val next = leads.map(_ => mutable.Queue.empty[(Long, UnsafeRow)]) // (row, inputs) counted
    var position = -1L
    held.generateIterator().map { row =>
      position += 1
      leads.indices.foreach { j =>
        val i = leads(j)
        while (next(j).nonEmpty && next(j).head._1 <= position) next(j).dequeue()
        while (next(j).size < reach(i) && ahead(j).hasNext) {
          val inputs = project(ahead(j).next())
          if (read(j) > position && counted(i, inputs)) next(j).enqueue((read(j), inputs.copy()))
          read(j) += 1
        }
        val after = reach(i) - 1
        val value =
          if (after < next(j).size) Some(next(j)(after)._2)
          else seed(i).lift(after - next(j).size)
        picked.setBoolean(leads.size + j, value.isDefined)
        value match {
          case Some(inputs) => picked.update(j, inputs.get(i, offsets(i).dataType))
          case None => picked.setNullAt(j)
        }
      }
      output(join(row, picked))
    }
  }
}

/** The last `capacity` rows added, oldest first, each copied into a reused slot. */
private final class LastRows(capacity: Int) {
  private val slots = new Array[UnsafeRow](capacity)
  private var start = 0
  private var count = 0

  def size: Int = count

  def oldest: UnsafeRow = slots(start)

  def add(row: UnsafeRow): Unit = if (capacity > 0) {
    val slot = (start + count) % capacity
    if (slots(slot) == null) slots(slot) = row.copy() else slots(slot).copyFrom(row)
    if (count < capacity) count += 1 else start = (start + 1) % capacity
  }

  def oldestFirst: IndexedSeq[UnsafeRow] =
    (0 until count).map(j => slots((start + j) % capacity).copy())
}

/**
 * Of the rows added, the `capacity` largest (`largest`) or smallest by `ordering`, each copied:
 * a heap whose top is the kept row farthest from that edge, replaced by a row beyond it.
 */
private final class EdgeRows(capacity: Int, largest: Boolean, ordering: Ordering[InternalRow]) {
  private val kept = new java.util.PriorityQueue[UnsafeRow](
    math.max(1, capacity),
    if (largest) ordering else ordering.reverse)

  def add(row: UnsafeRow): Unit = if (capacity > 0) {
    if (kept.size < capacity) kept.add(row.copy())
    else {
      val top = kept.peek()
      val byOrder = ordering.compare(row, top)
      if (if (largest) byOrder > 0 else byOrder < 0) {
        kept.poll()
        top.copyFrom(row)
        kept.add(top)
      }
    }
  }

  def inOrder: IndexedSeq[UnsafeRow] = {
    val rows = new Array[UnsafeRow](kept.size)
    kept.toArray(rows)
    rows.sorted(ordering).toIndexedSeq
  }
}

/** The rows a split reaches beyond it, from the edges of the splits of its key (in order). */
private object SplitEdges {

  /** Per split, the last `n` rows of the splits before it, from each split's last rows. */
  def before(lasts: Seq[IndexedSeq[UnsafeRow]], n: Int): Seq[IndexedSeq[UnsafeRow]] =
    lasts.scanLeft(IndexedSeq.empty[UnsafeRow])((rows, last) => (rows ++ last).takeRight(n)).init

  /** Per split, the first `n` rows of the splits after it, from each split's first rows. */
  def after(firsts: Seq[IndexedSeq[UnsafeRow]], n: Int): Seq[IndexedSeq[UnsafeRow]] =
    firsts.scanRight(IndexedSeq.empty[UnsafeRow])((first, rows) => (first ++ rows).take(n)).tail
}
