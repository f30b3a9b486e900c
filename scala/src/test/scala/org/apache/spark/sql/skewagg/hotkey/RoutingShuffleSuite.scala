package org.apache.spark.sql.skewagg.hotkey

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.LongType

/** The routing shuffle copies its rows exactly where Spark's exchange copies them. */
class RoutingShuffleSuite extends AnyFunSuite {

  test("rows are copied unless Spark's sort-based shuffle writes each one as it comes") {
    import RoutingShuffle.mustCopy
    // The bypass writer (up to the threshold), then the serialized writer (up to 2^24).
    assert(!mustCopy(264, sortBasedShuffle = true, bypassMergeThreshold = 200))
    assert(!mustCopy(150, sortBasedShuffle = true, bypassMergeThreshold = 200))
    assert(!mustCopy(1 << 24, sortBasedShuffle = true, bypassMergeThreshold = 200))
    assert(mustCopy((1 << 24) + 1, sortBasedShuffle = true, bypassMergeThreshold = 200))
    assert(!mustCopy((1 << 24) + 1, sortBasedShuffle = true, bypassMergeThreshold = 1 << 25))
    // Another shuffle manager may hold the records it is given.
    assert(mustCopy(10, sortBasedShuffle = false, bypassMergeThreshold = 200))
  }

  test("copied, the rows held stay whole when the input reuses one row") {
    val project = UnsafeProjection.create(Seq(BoundReference(0, LongType, nullable = false)))
    // As a shuffle reader or a projection hands out rows: one object, rewritten per row.
    def input: Iterator[InternalRow] = (0L until 5L).iterator.map(i => project(InternalRow(i)))
    def held(copy: Boolean): Seq[(Int, Long)] =
      RoutingShuffle.routedRows(input, row => (row.getLong(0) % 2).toInt, copy)
        .map(pair => (pair._1, pair._2.asInstanceOf[UnsafeRow]))
        .toList
        .map { case (partition, row) => (partition, row.getLong(0)) }
    assert(held(copy = true) == Seq((0, 0L), (1, 1L), (0, 2L), (1, 3L), (0, 4L)))
    // Without the copy every row held is the last one: why another shuffle manager needs it.
    assert(held(copy = false).map(_._2) == Seq.fill(5)(4L))
  }
}
