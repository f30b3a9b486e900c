package org.apache.spark.sql.skewagg.hotkey

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Ascending, AttributeReference, SortOrder}
import org.apache.spark.sql.skewagg.SkewAggSuiteBase
import org.apache.spark.sql.types.LongType

/** [[HotKeyRanges.sample]]'s estimates, and a routing renumbered. */
class HotKeyRangesSuite extends SkewAggSuiteBase {

  test("with partition weights, each sampled row stands for its partition's weight") {
    val k = AttributeReference("k", LongType)()
    val o = AttributeReference("o", LongType)()
    // Partition 0: 100 rows of key 0; partition 1: 100 rows of key 1.
    val input = spark.sparkContext.parallelize(0 until 200, 2)
      .map(i => InternalRow((i / 100).toLong, i.toLong))
    val ranges = HotKeyRanges.sample(
      input,
      Seq(k),
      Seq(Seq(SortOrder(o, Ascending))),
      Seq(k, o),
      hashPartitions = 4,
      minKeyRows = 1,
      maxSplits = 8,
      sampleSize = 1000,
      sampleFraction = 1.0,
      slots = 1,
      factor = 0.0,
      partitionWeights = Some(IndexedSeq(10.0, 1.0))).head
    assert(ranges.totalRows == 1100.0)
    assert(ranges.largestKeyRows == 1000.0)
    // Key 0 holds 1000 of 1100 estimated rows, 3.6 average partitions; key 1 less than one.
    assert(ranges.hotKeys.map(_.key.getLong(0)) == Seq(0L))
    assert(ranges.hotKeys.head.numSplits == 4)
    assert(ranges.ordinaryRows == 100.0)

    // Fewer hash partitions: the hot key's splits follow them, with the same bounds.
    val fewer = ranges.withHashPartitions(1)
    assert(fewer.hashPartitions == 1 && fewer.numPartitions == 5)
    assert(fewer.hotKeys.head.partitions == (1 until 5))
    assert(fewer.hotKeys.head.bounds.sameElements(ranges.hotKeys.head.bounds))
    val router = fewer.router(Seq(k), Seq(SortOrder(o, Ascending)), Seq(k, o))
    assert(router(InternalRow(1L, 150L)) == 0)
    assert((0 until 100).map(i => router(InternalRow(0L, i.toLong))).toSet == (1 until 5).toSet)
  }
}
