package org.apache.spark.sql.skewagg.window

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  JoinedRow, Literal, MutableProjection, NTile, SizeBasedWindowFunction, SpecificInternalRow
}
import org.scalatest.funsuite.AnyFunSuite

/** [[NTileSeed]]'s closed form against Spark's own ntile buffer, updated row by row. */
class NTileSeedSuite extends AnyFunSuite {

  test("the buffer after every prefix of every partition size, for 1 to 25 buckets") {
    for (buckets <- 1 to 25) {
      val ntile = NTile(Literal(buckets))
      val attributes = ntile.aggBufferAttributes
      val n = SizeBasedWindowFunction.n
      val buffer = new SpecificInternalRow(attributes.map(_.dataType))
      // One projection of each kind per bucket count: the partition size is their input.
      val initial = MutableProjection.create(ntile.initialValues, Seq(n)).target(buffer)
      val update =
        MutableProjection.create(ntile.updateExpressions, attributes :+ n).target(buffer)
      for (total <- 0 to 130) {
        val size = InternalRow(total)
        initial(size)
        for (rows <- 0 to total) {
          val spark = attributes.indices.map(buffer.getInt)
          assert(
            NTileSeed.after(rows, total, buckets) == spark,
            s"ntile($buckets) of $total rows after $rows")
          update(new JoinedRow(buffer, size))
        }
      }
    }
  }
}
