package org.apache.spark.sql.skewagg

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.Row

/** The differential tests' row comparison: what it takes for the same rows, and what not. */
class RowComparisonSuite extends AnyFunSuite {
  private def same(expected: Seq[Row], actual: Seq[Row]): Boolean =
    RowComparison.difference(expected, actual).isEmpty

  test("the same rows in any order, NaN equal to NaN, -0.0 to 0.0, doubles within 1e-9") {
    val rows = (0 until 5000).map(i => Row(0L, if (i % 2 == 0) Double.NaN else i / 7.0))
    assert(same(rows, rows.reverse))
    assert(same(Seq(Row(1L, -0.0), Row(2L, Float.NaN)), Seq(Row(2L, Double.NaN), Row(1L, 0.0))))
    assert(same(Seq(Row(1.0 / 3)), Seq(Row(1.0 / 3 * (1 + 1e-12)))))
    val nested = Seq(Row(Seq(Double.NaN, 1.0), Row(Double.NaN)))
    assert(same(nested, nested.map(r => Row(r.toSeq: _*))))
  }

  test("a NaN against a number, a row more or less, a value off by more than the tolerance") {
    val rows = (0 until 5000).map(i => Row(0L, if (i % 2 == 0) Double.NaN else i / 7.0))
    assert(!same(rows, rows.updated(0, Row(0L, 0.0))))
    assert(!same(rows, rows.updated(1, Row(0L, Double.NaN))))
    assert(!same(rows, rows.tail :+ rows.last))
    val fewer = RowComparison.difference(rows, rows.tail)
    assert(fewer.contains("5000 rows expected, 4999 rows returned"), fewer)
    assert(!same(Seq(Row(1.0 / 3)), Seq(Row(1.0 / 3 * (1 + 1e-6)))))
    assert(!same(Seq(Row(Seq(Double.NaN, 1.0))), Seq(Row(Seq(1.0, Double.NaN)))))
  }
}
