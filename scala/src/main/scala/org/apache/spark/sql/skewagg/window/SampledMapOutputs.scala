package org.apache.spark.sql.skewagg.window

import org.apache.spark.sql.execution.{PartialReducerPartitionSpec, ShufflePartitionSpec}

/** Which map outputs of a window's skewed partitions its sample reads, and what each stands for. */
object SampledMapOutputs {

  /**
   * The map outputs of the skewed reducers (each with its sizes by map output: `reducers`) the
   * sample reads ([[systematic]] of their sizes; n is `fraction` of the non-empty ones, at least
   * one per reducer and at least `atLeast`), each with the rows each of its rows stands for. Map
   * outputs are runs of the input, so an order correlated with the input's position is sampled
   * across all of it.
   */
  def of(
      reducers: Seq[(Int, Array[Long])],
      fraction: Double,
      atLeast: Int = 1): Seq[(ShufflePartitionSpec, Double)] = {
    val outputs = reducers.flatMap { case (r, sizes) =>
      sizes.toSeq.zipWithIndex.map { case (size, m) => (r, m, size) }
    }.filter(_._3 > 0).toIndexedSeq
    val n = math.max(math.max(reducers.size, atLeast), math.ceil(outputs.size * fraction).toInt)
    systematic(outputs.map(_._3), n).map { case (i, weight) =>
      val (r, m, size) = outputs(i)
      (PartialReducerPartitionSpec(r, m, m + 1, size), weight)
    }
  }

  /**
   * Systematic sampling in proportion to size: n points evenly spaced over the items' total,
   * the first half a step in; an item holding a point is chosen, with weight 1 / its chance to
   * hold one (min(1, n x its size / total)). With n at least the items, every item, weight 1.
   */
  def systematic(sizes: IndexedSeq[Long], n: Int): Seq[(Int, Double)] = {
    if (n >= sizes.size) return sizes.indices.map(i => (i, 1.0))
    val step = sizes.map(_.toDouble).sum / n
    var next = step / 2
    var start = 0.0
    sizes.indices.flatMap { i =>
      val end = start + sizes(i)
      val holds = next < end
      while (next < end) next += step
      start = end
      if (holds) Some((i, math.max(1.0, step / sizes(i)))) else None
    }
  }
}
