package org.apache.spark.sql.skewagg.hotkey

import org.apache.spark.SparkContext
import org.apache.spark.sql.execution.SQLExecution
import org.apache.spark.sql.execution.metric.{
  SQLMetric, SQLMetrics, SQLShuffleReadMetricsReporter, SQLShuffleWriteMetricsReporter
}

/**
 * The metrics every operator that splits hot keys reports besides its own: hot keys split,
 * splits, the routing shuffle's data size, and Spark's shuffle read (`read`) and write (`write`)
 * metrics, which Spark's reporters update by name.
 *
 * Rule: an operator lists [[byName]] in its `metrics`, after its own; `hotKeys` and `splits` are
 * set on the driver ([[recordSplit]]), so [[postDriverUpdates]] posts them with the operator's
 * other driver metrics once its run has set them.
 */
final case class HotKeySplitMetrics(
    hotKeys: SQLMetric,
    splits: SQLMetric,
    dataSize: SQLMetric,
    read: Map[String, SQLMetric],
    write: Map[String, SQLMetric]) {

  /** Every metric, by the name an operator's `metrics` gives it. */
  def byName: Map[String, SQLMetric] =
    Map("hotKeys" -> hotKeys, "splits" -> splits, "dataSize" -> dataSize) ++ read ++ write

  /** A run's split: `keys` hot keys, read by `tasks` tasks. */
  def recordSplit(keys: Int, tasks: Int): Unit = {
    hotKeys.set(keys.toLong)
    splits.set(tasks.toLong)
  }

  /** Posts `others`, then `hotKeys` and `splits` (all set on the driver) to the running query. */
  def postDriverUpdates(sparkContext: SparkContext, others: Seq[SQLMetric]): Unit =
    SQLMetrics.postDriverMetricUpdates(
      sparkContext,
      sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY),
      others ++ Seq(hotKeys, splits))
}

object HotKeySplitMetrics {

  /** The metrics, created in `sparkContext` with the names the SQL UI shows. */
  def apply(sparkContext: SparkContext): HotKeySplitMetrics = HotKeySplitMetrics(
    SQLMetrics.createMetric(sparkContext, "number of hot keys split"),
    SQLMetrics.createMetric(sparkContext, "number of splits"),
    SQLMetrics.createSizeMetric(sparkContext, "data size"),
    SQLShuffleReadMetricsReporter.createShuffleReadMetrics(sparkContext),
    SQLShuffleWriteMetricsReporter.createShuffleWriteMetrics(sparkContext))
}
