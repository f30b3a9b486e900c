package org.apache.spark.sql.skewagg.skewsplit

import org.apache.spark.sql.catalyst.expressions.{AttributeSet, Expression}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, LogicalPlan}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.{LogicalQueryStage, ShuffleQueryStageExec}
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  AveragedBlockSizes, PartialAggregates, SkewAggConf, SkewedPartitions
}
import org.apache.spark.sql.skewagg.SkewAggDecision.NotSkewed

/**
 * The skew test of a shuffle read by a partial aggregate that groups by more than the shuffle's
 * keys. A DISTINCT's first step is one: `count(DISTINCT i) ... GROUP BY k` over input hashed on
 * `k` deduplicates `(k, i)` where it reads, so the task holding a hot key holds a group per
 * distinct value of it and probes them once per row it reads. A deduplication before the shuffle
 * (skewagg's local aggregate) leaves each map task's distinct values: narrow rows that compress
 * to a few bytes, so a hot partition holding millions of them stays below the byte floor.
 *
 * Such a shuffle is measured in rows, what the reading task works through: each partition's
 * share of the records written, in proportion to its bytes (Spark keeps bytes per partition, and
 * records for the whole shuffle). Against the per-slot share, rows rank the
 * partitions as bytes do; the floor (`spark.skewagg.skew.minPartitionSize`) is compared with the
 * rows at their size in memory (the shuffle's data size per record) instead of compressed bytes,
 * and so is the smallest piece a split cuts (`spark.skewagg.skew.minSplitSize`).
 * The join split measures so where its aggregate groups by more than the join keys; the
 * repartition split below a DISTINCT's first step (docs/rewrites.md, "A hot key with many DISTINCT
 * values").
 */
object GroupsBeyondShuffleKeys {

  /** A partial aggregate grouping by an attribute that is not among `keys`' references. */
  def applies(partial: SparkPlan, keys: Seq[Expression]): Boolean =
    PartialAggregates.unwrap(partial) match {
      case agg: BaseAggregateExec =>
        val keyAttributes = AttributeSet(keys.flatMap(_.references))
        agg.groupingExpressions.exists(g => !keyAttributes.contains(g.toAttribute))
      case _ => false
    }

  /**
   * A materialized shuffle's partitions as a skew test measures them: `sizes` (what is compared
   * and reported: bytes, or rows with `skew.inRows`), `atFloor` (what the floor is compared with)
   * and the shuffle's own bytes, with the floor and the smallest piece of a split
   * (`spark.skewagg.skew.minSplitSize`) expressed in them (for the splits, which cut bytes).
   */
  final case class Measured(
      bytes: Array[Long],
      sizes: Array[Long],
      atFloor: Array[Long],
      skew: SkewedPartitions,
      byteFloor: Long,
      byteMinSplit: Long) {

    /** The record of a test that found nothing skewed, in the test's own measure. */
    def notSkewed(where: String, conf: SQLConf): NotSkewed =
      NotSkewed.of(where, sizes, atFloor, skew, conf)
        .copy(averaged = AveragedBlockSizes.measured(bytes.length, conf))
  }

  /** The bytes test of Spark's skew join, with skewagg's thresholds. */
  def inBytes(bytes: Array[Long], conf: SQLConf): Measured =
    Measured(bytes, bytes, bytes, SkewedPartitions.find(bytes, conf), floor(conf), minSplit(conf))

  /**
   * What a split below `partial` does with its groups, for the rewrite's record: where it groups
   * by more than the shuffle's keys, they are exchanged on all its grouping keys (`onlyPieces`:
   * the skewed partitions' pieces' groups only, the others aggregating in place).
   */
  def spreadNote(partial: SparkPlan, onlyPieces: Boolean = false): String =
    PartialAggregates.unwrap(partial) match {
      case agg: BaseAggregateExec =>
        val keys = agg.groupingExpressions.map(_.name).mkString(", ")
        val whose = if (onlyPieces) "its pieces' groups" else "its groups"
        val rest = if (onlyPieces) "; the other partitions aggregate in place (a union)" else ""
        s"; $whose of ($keys) are exchanged on all of them, spreading a hot key's values$rest"
      case _ => ""
    }

  /**
   * The first step of a DISTINCT aggregate: a partial aggregate Spark planned for an aggregate
   * with a DISTINCT function (it groups by the keys and the distinct values; the aggregate above
   * it regroups by the keys).
   */
  def isDistinctStep(partial: SparkPlan): Boolean =
    PartialAggregates.unwrap(partial).logicalLink.exists(hasDistinct)

  /** An Aggregate with a DISTINCT function (adaptive re-planning links to it through a stage). */
  private def hasDistinct(plan: LogicalPlan): Boolean = plan match {
    case a: Aggregate => a.aggregateExpressions.exists(_.exists {
        case e: AggregateExpression => e.isDistinct
        case _ => false
      })
    case stage: LogicalQueryStage => hasDistinct(stage.logicalPlan)
    case _ => false
  }

  /**
   * `stage`'s partitions measured in rows when `inRows` and the shuffle counted its records,
   * else in bytes.
   */
  def measure(stage: ShuffleQueryStageExec, inRows: Boolean, conf: SQLConf): Measured = {
    val stats = stage.getRuntimeStatistics
    measure(
      stage.mapStats.get.bytesByPartitionId,
      if (inRows) stats.rowCount.map(_.toLong).getOrElse(0L) else 0L,
      stats.sizeInBytes.toLong,
      conf)
  }

  /**
   * Partitions of `bytes` of a shuffle that wrote `records` records of `dataSize` bytes in memory:
   * in rows, each partition's share of the records in proportion to its bytes; in bytes when
   * `records` is 0 (not counted, or not wanted).
   */
  def measure(bytes: Array[Long], records: Long, dataSize: Long, conf: SQLConf): Measured = {
    val total = bytes.sum
    if (records <= 0 || total <= 0 || dataSize <= 0) return inBytes(bytes, conf)
    val rows = bytes.map(b => math.round(b.toDouble * records / total))
    val inMemory = rows.map(r => math.round(r.toDouble * dataSize / records))
    // Sizes in memory (the floor, the smallest piece) in the shuffle's bytes.
    def inShuffleBytes(inMemory: Long) =
      math.max(1L, math.round(inMemory.toDouble * total / dataSize))
    Measured(
      bytes,
      rows,
      inMemory,
      SkewedPartitions.findByRows(rows, conf, inMemory),
      inShuffleBytes(floor(conf)),
      inShuffleBytes(minSplit(conf)))
  }

  private def floor(conf: SQLConf): Long = conf.getConf(SkewAggConf.SKEW_MIN_PARTITION_SIZE)

  private def minSplit(conf: SQLConf): Long = conf.getConf(SkewAggConf.SKEW_MIN_SPLIT_SIZE)
}
