package org.apache.spark.sql.skewagg.hotkey

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Ascending, AttributeReference, SortOrder, UnsafeProjection
}
import org.apache.spark.sql.execution.metric.SQLMetrics
import org.apache.spark.sql.skewagg.SkewAggSuiteBase
import org.apache.spark.sql.types.{IntegerType, StringType}
import org.apache.spark.unsafe.types.UTF8String

/** A total sort reads rows equal in the order in one order, however they arrive. */
class ExternalSortsSuite extends SkewAggSuiteBase {

  test("ties by the rows' bytes, in Spark's sorter as between rows copied out of it") {
    val k = AttributeReference("k", IntegerType)()
    val s = AttributeReference("s", StringType)()
    val order = Seq(SortOrder(k, Ascending))
    // Few order values, many rows each; strings of different lengths, some null.
    val values = (0 until 3000).map { i =>
      (i % 3, if (i % 7 == 0) null else "x" * (i % 11) + i.toString)
    }
    val spillSize = SQLMetrics.createSizeMetric(spark.sparkContext, "spill")
    def sorted(arrival: Seq[(Int, String)]): Seq[(Int, String)] =
      spark.sparkContext.parallelize(Seq(0), 1).mapPartitions { _ =>
        val project = UnsafeProjection.create(Seq(k, s), Seq(k, s))
        val rows = arrival.iterator.map { case (key, string) =>
          project(InternalRow(key, UTF8String.fromString(string))).copy()
        }
        val ordering = ExternalSorts.totalOrdering(order, Seq(k, s))
        val out = ExternalSorts.sortTotally(rows, order, Seq(k, s), spillSize).map(_.copy()).toList
        // Copied out of the sorter (their true sizes), the rows compare in the order it made.
        assert(out.zip(out.drop(1)).forall { case (a, b) => ordering.compare(a, b) <= 0 })
        out.iterator.map(r => (r.getInt(0), Option(r.getUTF8String(1)).map(_.toString).orNull))
      }.collect().toSeq
    val forward = sorted(values)
    assert(forward.map(_._1) == forward.map(_._1).sorted)
    assert(forward.toSet == values.toSet)
    assert(sorted(values.reverse) == forward)
    assert(sorted(scala.util.Random.shuffle(values)) == forward)
  }
}
