package org.apache.spark.sql.skewagg.hotkey

import org.apache.spark.{SparkEnv, TaskContext}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute, BindReferences, SortOrder, SortPrefix, UnsafeProjection, UnsafeRow
}
import org.apache.spark.sql.catalyst.expressions.codegen.LazilyGeneratedOrdering
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.execution.{SortExec, SortPrefixUtils, UnsafeExternalRowSorter}
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.unsafe.Platform

/** Sorting a task's rows with Spark's external sorter, outside a SortExec node. */
object ExternalSorts {

  /**
   * `rows` sorted with the external sorter of `by` (as SortExec runs it); the bytes it spilled
   * are added to `spillSize` and its peak memory to the task's (as SortExec does).
   */
  def sort(
      rows: Iterator[InternalRow],
      by: SortExec,
      spillSize: SQLMetric): Iterator[InternalRow] = run(by.createSorter(), rows, spillSize)

  /**
   * `rows` (of `output`) sorted by `order` as a SortExec of it sorts them: rows equal in it in the
   * order they arrive, by a radix sort of the first key's prefix when that prefix is the whole
   * order (one key of a fixed-width type, radix sort enabled).
   */
  def sortBy(
      rows: Iterator[InternalRow],
      order: Seq[SortOrder],
      output: Seq[Attribute],
      spillSize: SQLMetric): Iterator[InternalRow] = {
    val radix = SQLConf.get.enableRadixSort && order.size == 1 &&
      SortPrefixUtils.canSortFullyWithPrefix(BindReferences.bindReference(order.head, output))
    run(sorter(order, output, new LazilyGeneratedOrdering(order, output), radix), rows, spillSize)
  }

  /**
   * `rows` (of `output`) sorted by `order`, and rows equal in it by their bytes: one order for
   * the same rows however they arrive (rows of equal bytes are equal). As [[sortBy]] otherwise,
   * with SortExec's prefix of the first key (and no radix sort: it orders by the prefix alone).
   */
  def sortTotally(
      rows: Iterator[InternalRow],
      order: Seq[SortOrder],
      output: Seq[Attribute],
      spillSize: SQLMetric): Iterator[InternalRow] =
    run(sorter(order, output, totalOrdering(order, output), radix = false), rows, spillSize)

  /**
   * The order [[sortTotally]] sorts by: `order`, then the rows' bytes (rows of `output`, unsafe).
   * Made in the task that uses it (its code is generated there).
   */
  def totalOrdering(order: Seq[SortOrder], output: Seq[Attribute]): Ordering[InternalRow] = {
    val ordering = new LazilyGeneratedOrdering(order, output)
    val bytes = new ByteOrder(output)
    new Ordering[InternalRow] {
      override def compare(a: InternalRow, b: InternalRow): Int = {
        val byOrder = ordering.compare(a, b)
        if (byOrder != 0) byOrder
        else bytes.compare(a.asInstanceOf[UnsafeRow], b.asInstanceOf[UnsafeRow])
      }
    }
  }

  /** Spark's external sorter of rows of `output` by `ordering`, with the prefix of `order`. */
  private def sorter(
      order: Seq[SortOrder],
      output: Seq[Attribute],
      ordering: Ordering[InternalRow],
      radix: Boolean): UnsafeExternalRowSorter = {
    val first = BindReferences.bindReference(order.head, output)
    val prefix = SortPrefix(first)
    val prefixProjection = UnsafeProjection.create(Seq(prefix))
    val prefixComputer = new UnsafeExternalRowSorter.PrefixComputer {
      private val result = new UnsafeExternalRowSorter.PrefixComputer.Prefix
      override def computePrefix(row: InternalRow)
          : UnsafeExternalRowSorter.PrefixComputer.Prefix = {
        val computed = prefixProjection(row)
        result.isNull = computed.isNullAt(0)
        result.value = if (result.isNull) prefix.nullValue else computed.getLong(0)
        result
      }
    }
    UnsafeExternalRowSorter.create(
      DataTypeUtils.fromAttributes(output),
      ordering,
      SortPrefixUtils.getPrefixComparator(first),
      prefixComputer,
      SparkEnv.get.memoryManager.pageSizeBytes,
      radix)
  }

  /**
   * A total order of unsafe rows of `output` by their bytes (not a meaningful one): words, then
   * lengths. A row's length is read from its layout (its fixed part and the ends of its
   * variable-length fields), not from its size: Spark's sorter compares the rows it points at
   * with a size of 0, and a row copied elsewhere has its true size; both must compare alike.
   */
  private final class ByteOrder(output: Seq[Attribute]) {
    private val fixed = UnsafeRow.calculateBitSetWidthInBytes(output.size) + 8 * output.size
    private val variable =
      output.indices.filterNot(i => UnsafeRow.isFixedLength(output(i).dataType)).toArray

    private def length(row: UnsafeRow): Int = {
      var end = fixed
      var j = 0
      while (j < variable.length) {
        if (!row.isNullAt(variable(j))) {
          val offsetAndSize = row.getLong(variable(j))
          end = math.max(end, (offsetAndSize >>> 32).toInt + offsetAndSize.toInt)
        }
        j += 1
      }
      end
    }

    def compare(a: UnsafeRow, b: UnsafeRow): Int = {
      val aLength = length(a)
      val bLength = length(b)
      val common = math.min(aLength, bLength)
      var i = 0
      while (i + 8 <= common) {
        val x = Platform.getLong(a.getBaseObject, a.getBaseOffset + i)
        val y = Platform.getLong(b.getBaseObject, b.getBaseOffset + i)
        if (x != y) return java.lang.Long.compare(x, y)
        i += 8
      }
      while (i < common) {
        val x = Platform.getByte(a.getBaseObject, a.getBaseOffset + i)
        val y = Platform.getByte(b.getBaseObject, b.getBaseOffset + i)
        if (x != y) return java.lang.Byte.compare(x, y)
        i += 1
      }
      Integer.compare(aLength, bLength)
    }
  }

  private def run(
      sorter: UnsafeExternalRowSorter,
      rows: Iterator[InternalRow],
      spillSize: SQLMetric): Iterator[InternalRow] = {
    val taskMetrics = TaskContext.get().taskMetrics()
    val spilledBefore = taskMetrics.memoryBytesSpilled
    val sorted = sorter.sort(rows.asInstanceOf[Iterator[UnsafeRow]]) // reads all rows first
    spillSize += taskMetrics.memoryBytesSpilled - spilledBefore
    taskMetrics.incPeakExecutionMemory(sorter.getPeakMemoryUsage)
    sorted
  }
}
