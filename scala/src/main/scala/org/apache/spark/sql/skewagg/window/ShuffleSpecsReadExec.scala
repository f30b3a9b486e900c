package org.apache.spark.sql.skewagg.window

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.execution.{LeafExecNode, ShufflePartitionSpec}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeLike

/** The `specs` of a planned exchange's shuffle (its map stage run), rows of `output`. */
case class ShuffleSpecsReadExec(
    output: Seq[Attribute],
    exchange: ShuffleExchangeLike,
    specs: Seq[ShufflePartitionSpec])
    extends LeafExecNode {
  override protected def doExecute(): RDD[InternalRow] =
    exchange.getShuffleRDD(specs.toArray).asInstanceOf[RDD[InternalRow]]
  override def simpleString(maxFields: Int): String =
    s"ShuffleSpecsRead ${specs.size} specs of ${exchange.nodeName} ${output.mkString(", ")}"
}
