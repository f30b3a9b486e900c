package io.skewagg.functions

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{LeafExpression, Literal}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.types.DataType

/**
 * A scalar function's answer, computed when its query is analyzed, that prints as the call that
 * gave it: its column is named `skewagg_task_slots()`, not after the value.
 */
final case class AnsweredAtAnalysis(value: Literal, call: String)
    extends LeafExpression
    with CodegenFallback {
  override def foldable: Boolean = true
  override def nullable: Boolean = value.nullable
  override def dataType: DataType = value.dataType
  override def eval(input: InternalRow): Any = value.value
  override def sql: String = call
  override def toString: String = call
}
