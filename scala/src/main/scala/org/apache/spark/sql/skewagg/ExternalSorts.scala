package org.apache.spark.sql.skewagg

import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.SortExec
import org.apache.spark.sql.execution.metric.SQLMetric

/** Sorting a task's rows with Spark's external sorter, outside a SortExec node. */
object ExternalSorts {

  /**
   * `rows` sorted with the external sorter of `by` (as SortExec runs it); the bytes it spilled
   * are added to `spillSize` and its peak memory to the task's (as SortExec does).
   */
  def sort(
      rows: Iterator[InternalRow],
      by: SortExec,
      spillSize: SQLMetric): Iterator[InternalRow] = {
    val sorter = by.createSorter()
    val taskMetrics = TaskContext.get().taskMetrics()
    val spilledBefore = taskMetrics.memoryBytesSpilled
    val sorted = sorter.sort(rows.asInstanceOf[Iterator[UnsafeRow]]) // reads all rows first
    spillSize += taskMetrics.memoryBytesSpilled - spilledBefore
    taskMetrics.incPeakExecutionMemory(sorter.getPeakMemoryUsage)
    sorted
  }
}
