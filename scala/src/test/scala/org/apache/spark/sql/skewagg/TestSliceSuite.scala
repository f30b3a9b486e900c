package org.apache.spark.sql.skewagg

import org.scalatest.funsuite.AnyFunSuite

/** How `make test` shares the slow tests and the fuzz corpus among the builds. */
class TestSliceSuite extends AnyFunSuite {
  private val builds = "3.5_2.12,4.0_2.13,4.1_2.13,4.2_2.13,4.3_2.13,3.5_2.13"
  private val slices = builds.split(",").indices.map(i => TestSlice.parse(s"$i/$builds"))
  private val names = (0 until 500).map(i => s"test $i")

  test("each test runs on exactly one build; one of Spark 4.0+ on a 4.x build") {
    for (name <- names) {
      assert(slices.count(_.holds("Suite", name, since = None)) == 1, name)
      val newer = slices.filter(_.holds("Suite", name, since = Some("4.0")))
      assert(newer.map(s => s.builds(s.index)).forall(_.startsWith("4.")), name)
      assert(newer.size == 1, name)
    }
    // Spread about evenly: no build holds less than half or more than twice its share.
    val counts = slices.map(s => names.count(s.holds("Suite", _, since = None)))
    assert(counts.forall(c => c > names.size / 12 && c < names.size / 3), counts)
  }

  test("the builds' fuzz slices hold every case, each at least the minimum") {
    for ((total, minimum) <- Seq(200 -> 30, 60 -> 10, 7 -> 3)) {
      val ranges = slices.map(_.cases(total, minimum))
      assert((0 until total).forall(c => ranges.exists(_.contains(c))), total)
      assert(ranges.forall(_.size >= minimum), ranges)
    }
    assert(TestSlice.parse("all").cases(200, 30) == (0 until 200))
    assert(TestSlice.parse("all").holds("Suite", "any", since = Some("4.0")))
  }

  test("a bad SKEWAGG_TEST_SLICE names the value and the form it takes") {
    for (bad <- Seq("3/6", "spread", "6/" + builds, "1/3.5,4.0")) {
      val e = intercept[IllegalArgumentException](TestSlice.parse(bad))
      assert(e.getMessage.contains(bad) && e.getMessage.contains("3.5_2.12"), e.getMessage)
    }
  }
}
