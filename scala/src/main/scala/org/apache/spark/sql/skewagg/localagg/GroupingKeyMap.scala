package org.apache.spark.sql.skewagg.localagg

import java.util.{HashMap => JHashMap}

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute, NamedExpression, UnsafeProjection, UnsafeRow
}
import org.apache.spark.sql.types.{DateType, IntegerType, LongType, TimestampNTZType, TimestampType}

/**
 * The grouping key → state map of [[FlushingPartialAggregateExec]]. In general it is keyed by the
 * key's UnsafeRow ([[GroupingKeyMap.ByRow]]); when the only grouping key is one integral input
 * column it is an open-addressing table over the key's values ([[GroupingKeyMap.ByValue]]): no
 * key projection, key copy or entry object per key, one multiply and a probe of two arrays.
 */
private[skewagg] abstract class GroupingKeyMap[V <: AnyRef] {

  /** The value of `input`'s grouping key, or null. */
  def get(input: InternalRow): V

  /** Adds `input`'s grouping key, not in the map yet; `get(input)` must be the call before. */
  def put(input: InternalRow, value: V): Unit

  /** Adds `key`, a grouping-key row as [[GroupingKeyMap.Cursor.key]] gives, not in the map yet. */
  def putKey(key: UnsafeRow, value: V): Unit

  def size: Int

  final def isEmpty: Boolean = size == 0

  /** Walks the entries, in no particular order. */
  def cursor(): GroupingKeyMap.Cursor[V]
}

private[skewagg] object GroupingKeyMap {

  /**
   * Makes maps for about `keys` keys of `grouping` over rows of `input`: by value when the only
   * grouping key is an integral input column (int and date read as ints, long and timestamps as
   * longs), else by the key's UnsafeRow as `project` computes it from an input row.
   */
  def constructor[V <: AnyRef](
      grouping: Seq[NamedExpression],
      input: Seq[Attribute],
      project: UnsafeProjection): Int => GroupingKeyMap[V] = {
    val byValue = grouping match {
      case Seq(a: Attribute) =>
        val ordinal = input.indexWhere(_.exprId == a.exprId)
        a.dataType match {
          case _ if ordinal < 0 => None
          case IntegerType | DateType => Some((ordinal, true))
          case LongType | TimestampType | TimestampNTZType => Some((ordinal, false))
          case _ => None
        }
      case _ => None
    }
    byValue match {
      case Some((ordinal, isInt)) => keys => new ByValue[V](ordinal, isInt, keys)
      case None => keys => new ByRow[V](project, keys)
    }
  }

  /** `advance()` then `key` (a grouping-key row, valid until the next advance) and `value`. */
  trait Cursor[V] {
    def advance(): Boolean
    def key: UnsafeRow
    def value: V
  }

  /** Keyed by the grouping key's UnsafeRow, as `project` computes it from an input row. */
  final class ByRow[V <: AnyRef](project: UnsafeProjection, expectedKeys: Int)
      extends GroupingKeyMap[V] {
    private[this] val map = new JHashMap[UnsafeRow, V](math.max(16, expectedKeys * 2))
    private[this] var lastKey: UnsafeRow = null

    override def get(input: InternalRow): V = {
      lastKey = project(input)
      map.get(lastKey)
    }

    override def put(input: InternalRow, value: V): Unit = map.put(lastKey.copy(), value)

    override def putKey(key: UnsafeRow, value: V): Unit = map.put(key.copy(), value)

    override def size: Int = map.size

    override def cursor(): Cursor[V] = new Cursor[V] {
      private[this] val entries = map.entrySet().iterator()
      private[this] var entry: java.util.Map.Entry[UnsafeRow, V] = null
      override def advance(): Boolean = entries.hasNext && { entry = entries.next(); true }
      override def key: UnsafeRow = entry.getKey
      override def value: V = entry.getValue
    }
  }

  /**
   * Keyed by the value of the integral input column at `ordinal` (int and date when `isInt`,
   * long and timestamps otherwise), null included, at most `expectedKeys` (at least 4) of them:
   * linear probing in a table of at least twice as many slots, indexed by Fibonacci hashing (so
   * sequential keys spread out).
   */
  final class ByValue[V <: AnyRef](ordinal: Int, isInt: Boolean, expectedKeys: Int)
      extends GroupingKeyMap[V] {
    private[this] val limit = math.max(4, expectedKeys)
    private[this] val bits = 32 - Integer.numberOfLeadingZeros(limit * 2 - 1)
    private[this] val mask = (1 << bits) - 1
    private[this] val keys = new Array[Long](1 << bits)
    private[this] val values = new Array[AnyRef](1 << bits)
    private[this] var nullValue: AnyRef = null
    private[this] var count = 0

    private def valueAt(row: InternalRow, i: Int): Long =
      if (isInt) row.getInt(i).toLong else row.getLong(i)

    /** The slot holding `v`, or the empty slot where it goes. */
    private def slot(v: Long): Int = {
      var i = ((v * 0x9e3779b97f4a7c15L) >>> (64 - bits)).toInt
      while (values(i) != null && keys(i) != v) i = (i + 1) & mask
      i
    }

    override def get(input: InternalRow): V = (
      if (input.isNullAt(ordinal)) nullValue else values(slot(valueAt(input, ordinal)))
    ).asInstanceOf[V]

    override def put(input: InternalRow, value: V): Unit = add(input, ordinal, value)

    override def putKey(key: UnsafeRow, value: V): Unit = add(key, 0, value)

    private def add(row: InternalRow, i: Int, value: V): Unit = {
      require(value != null && count < limit, s"a null value, or more than $limit keys")
      if (row.isNullAt(i)) nullValue = value
      else {
        val v = valueAt(row, i)
        val s = slot(v)
        keys(s) = v
        values(s) = value
      }
      count += 1
    }

    override def size: Int = count

    override def cursor(): Cursor[V] = new Cursor[V] {
      private[this] val row = new UnsafeRow(1)
      row.pointTo(new Array[Byte](16), 16)
      private[this] var i = if (nullValue != null) -1 else 0
      private[this] var current: AnyRef = null

      override def advance(): Boolean = {
        if (i == -1) {
          row.setNullAt(0)
          current = nullValue
          i = 0
          return true
        }
        while (i < values.length && values(i) == null) i += 1
        if (i == values.length) return false
        if (isInt) row.setInt(0, keys(i).toInt) else row.setLong(0, keys(i))
        current = values(i)
        i += 1
        true
      }

      override def key: UnsafeRow = row
      override def value: V = current.asInstanceOf[V]
    }
  }
}
