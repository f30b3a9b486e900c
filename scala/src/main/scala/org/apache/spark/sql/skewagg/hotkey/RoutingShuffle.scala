package org.apache.spark.sql.skewagg.hotkey

import org.apache.spark.{PartitionIdPassthrough, ShuffleDependency, SparkEnv}
import org.apache.spark.internal.config.SHUFFLE_SORT_BYPASS_MERGE_THRESHOLD
import org.apache.spark.rdd.RDD
import org.apache.spark.shuffle.sort.SortShuffleManager
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.util.MutablePair

/**
 * The shuffle that splits hot keys: each row goes to the partition its router chose
 * ([[HotKeyRanges.router]]), through [[BufferedUnsafeRowSerializer]] and Spark's shuffle writer.
 */
object RoutingShuffle {

  /**
   * Each row with its partition (of `numPartitions`), in one pair reused; the rows are copied
   * only where ShuffleExchangeExec copies them ([[mustCopy]]).
   */
  def routed(
      rows: Iterator[InternalRow],
      partitionOf: InternalRow => Int,
      numPartitions: Int): Iterator[Product2[Int, InternalRow]] = {
    val env = SparkEnv.get
    val copy = mustCopy(
      numPartitions,
      sortBasedShuffle = env.shuffleManager.isInstanceOf[SortShuffleManager],
      env.conf.get(SHUFFLE_SORT_BYPASS_MERGE_THRESHOLD))
    routedRows(rows, partitionOf, copy)
  }

  private[skewagg] def routedRows(
      rows: Iterator[InternalRow],
      partitionOf: InternalRow => Int,
      copy: Boolean): Iterator[Product2[Int, InternalRow]] = {
    val pair = new MutablePair[Int, InternalRow]()
    if (copy) rows.map(row => pair.update(partitionOf(row), row.copy()))
    else rows.map(row => pair.update(partitionOf(row), row))
  }

  /**
   * Whether the rows must be copied before the shuffle writer takes them, as ShuffleExchangeExec
   * decides: not with Spark's sort-based shuffle (`SortShuffleManager`), which writes each record
   * before it reads the next (its bypass writer up to `bypassMergeThreshold` partitions, its
   * serialized writer, which takes these records, up to 16M); with another shuffle manager,
   * which may hold them.
   */
  private[skewagg] def mustCopy(
      numPartitions: Int,
      sortBasedShuffle: Boolean,
      bypassMergeThreshold: Int): Boolean =
    !(sortBasedShuffle &&
      (numPartitions <= bypassMergeThreshold ||
        numPartitions <= SortShuffleManager.MAX_SHUFFLE_OUTPUT_PARTITIONS_FOR_SERIALIZED_MODE))

  /** `routed` rows of `numFields` fields, shuffled to the partitions paired with them. */
  def dependency(
      routed: RDD[Product2[Int, InternalRow]],
      numPartitions: Int,
      numFields: Int,
      dataSize: SQLMetric,
      writeMetrics: Map[String, SQLMetric]): ShuffleDependency[Int, InternalRow, InternalRow] =
    new ShuffleDependency[Int, InternalRow, InternalRow](
      routed,
      new PartitionIdPassthrough(numPartitions),
      new BufferedUnsafeRowSerializer(numFields, dataSize),
      shuffleWriterProcessor = ShuffleExchangeExec.createShuffleWriteProcessor(writeMetrics))
}
