package org.apache.spark.sql.skewagg.window

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.execution.LeafExecNode

/**
 * Rows already computed (a shuffle [[HotKeySplitWindowExec]] read) as the input of Spark's own
 * operators that it runs on them: passed through as they are, binary rows of `output`.
 */
case class RowsScanExec(output: Seq[Attribute], rows: RDD[InternalRow]) extends LeafExecNode {
  override protected def doExecute(): RDD[InternalRow] = rows
  override def simpleString(maxFields: Int): String = s"RowsScan ${output.mkString(", ")}"
}
