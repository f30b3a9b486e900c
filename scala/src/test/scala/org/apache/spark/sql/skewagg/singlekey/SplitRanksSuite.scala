package org.apache.spark.sql.skewagg.singlekey

import org.scalatest.funsuite.AnyFunSuite

/** The rank arithmetic of the hot-key split, without Spark. */
class SplitRanksSuite extends AnyFunSuite {
  test("offsets, total, and the split holding each rank") {
    val r = SplitRanks(Vector(3L, 4L, 2L))
    assert(r.offsets == Vector(0L, 3L, 7L, 9L))
    assert(r.total == 9L)
    assert((0L until 9L).map(r.splitOf) == Seq(0, 0, 0, 1, 1, 1, 1, 2, 2))
  }

  test("empty splits hold no rank; ranks past the end belong to the last split") {
    val r = SplitRanks(Vector(0L, 2L, 0L, 0L, 3L))
    assert((0L until 5L).map(r.splitOf) == Seq(1, 1, 4, 4, 4))
    assert(r.splitOf(5L) == 4)
    assert(SplitRanks(Vector(0L, 0L)).splitOf(0L) == 1)
  }

  test("local ranks per split, ascending, shifted by the split's offset") {
    val r = SplitRanks(Vector(3L, 4L, 2L))
    val local = r.localRanks(Seq(8L, 0L, 3L, 2L, 6L))
    assert(local.map(_.toSeq) == Seq(Seq(0L, 2L), Seq(0L, 3L), Seq(1L)))
  }

  test("interpolation pairs that straddle two splits") {
    val r = SplitRanks(Vector(3L, 4L, 2L))
    assert(r.straddling(Seq((2L, 3L), (3L, 4L), (6L, 7L), (8L, 8L))) == 2)
  }
}
