package org.apache.spark.sql.skewagg.skewsplit

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.plans.physical.{
  ClusteredDistribution, Distribution, Partitioning, RangeShuffleSpec, ShuffleSpec
}

/**
 * The partitioning of tasks that each read whole partitions of a shuffle hash-partitioned on
 * `keys`, some of its partitions left out: every row of a key is in one task, but which task
 * does not follow the hash. It satisfies a clustering on the keys (as a coalesced read does) and
 * is co-partitioned with nothing, so a join with another input shuffles that input.
 */
case class WholeShufflePartitions(keys: Seq[Expression], numPartitions: Int)
    extends Partitioning {

  override protected def satisfies0(required: Distribution): Boolean =
    super.satisfies0(required) || (required match {
      case c: ClusteredDistribution if c.requireAllClusterKeys =>
        keys.length == c.clustering.length &&
        keys.zip(c.clustering).forall { case (k, r) => k.semanticEquals(r) }
      case c: ClusteredDistribution =>
        keys.forall(k => c.clustering.exists(_.semanticEquals(k)))
      case _ => false
    })

  /** Compatible with no other input's partitioning: a join shuffles the other input. */
  override def createShuffleSpec(distribution: ClusteredDistribution): ShuffleSpec =
    RangeShuffleSpec(numPartitions, distribution)
}
