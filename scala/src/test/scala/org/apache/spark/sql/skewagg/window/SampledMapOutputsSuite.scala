package org.apache.spark.sql.skewagg.window

import org.scalatest.funsuite.AnyFunSuite

/** [[SampledMapOutputs.systematic]]: which map outputs the window's sample reads. */
class SampledMapOutputsSuite extends AnyFunSuite {

  import SampledMapOutputs.systematic

  test("n evenly spaced items of equal sizes, each standing for the ones skipped") {
    assert(systematic(IndexedSeq.fill(100)(10L), 10) ==
      (0 until 10).map(i => (i * 10 + 5, 10.0)))
    assert(systematic(IndexedSeq.fill(7)(10L), 7) == (0 until 7).map(i => (i, 1.0)))
    assert(systematic(IndexedSeq.fill(3)(10L), 9) == (0 until 3).map(i => (i, 1.0)))
  }

  test("an item larger than a step is always chosen, for itself alone") {
    for (at <- Seq(0, 17, 99)) {
      val sizes = IndexedSeq.tabulate(100)(i => if (i == at) 5000L else 10L)
      val chosen = systematic(sizes, 10).toMap
      assert(chosen.get(at).contains(1.0), chosen)
      // Every point lands in an item, and the weights estimate the total within a step.
      assert(chosen.size <= 10)
      val estimate = chosen.map { case (i, w) => sizes(i) * w }.sum
      assert(math.abs(estimate - sizes.sum) <= sizes.sum / 10.0, (estimate, sizes.sum))
    }
  }
}
