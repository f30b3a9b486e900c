package org.apache.spark.sql.skewagg.hotkey

import org.apache.spark.sql.execution.ExternalAppendOnlyUnsafeRowArray

/**
 * Spark's spillable row buffer, Spark 4.1 and newer: thresholds in rows and in bytes. skewagg's
 * settings are in rows, so the byte thresholds are unbounded: the buffer keeps and spills the same
 * rows as on Spark 4.0.
 */
object SpillableRowArrays {
  def create(inMemoryRows: Int, spillRows: Int): ExternalAppendOnlyUnsafeRowArray =
    new ExternalAppendOnlyUnsafeRowArray(inMemoryRows, Long.MaxValue, spillRows, Long.MaxValue)
}
