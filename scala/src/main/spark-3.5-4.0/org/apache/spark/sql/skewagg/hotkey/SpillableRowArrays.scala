package org.apache.spark.sql.skewagg.hotkey

import org.apache.spark.sql.execution.ExternalAppendOnlyUnsafeRowArray

/** Spark's spillable row buffer, Spark 4.0: thresholds in rows only. */
object SpillableRowArrays {
  def create(inMemoryRows: Int, spillRows: Int): ExternalAppendOnlyUnsafeRowArray =
    new ExternalAppendOnlyUnsafeRowArray(inMemoryRows, spillRows)
}
