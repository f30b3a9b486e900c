package io.skewagg.functions

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.{CatalystTypeConverters, InternalRow}
import org.apache.spark.sql.catalyst.analysis.MultiInstanceRelation
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.logical.{LeafNode, LogicalPlan, Statistics}
import org.apache.spark.sql.execution.{LeafExecNode, SparkPlan, SparkStrategy}
import org.apache.spark.sql.types.StructType

/**
 * What a skewagg table function answers: rows computed on the driver when its query runs, from
 * the session that runs it. Not when the query is analyzed: a Spark Connect server analyzes a
 * relation more than once (for its schema, then to run it), and an answer may run a query.
 */
trait DriverRows {
  def schema: StructType
  def rows(session: SparkSession): Seq[Row]

  /** What the plan prints for it. */
  def describe: String
}

/** A table function's relation: [[DriverRows]] with their attributes, planned as one. */
final case class DriverRowsRelation(source: DriverRows, output: Seq[Attribute])
    extends LeafNode
    with MultiInstanceRelation {
  // A few thousand short rows at most.
  override def computeStats(): Statistics = Statistics(sizeInBytes = BigInt(1) << 20)
  override def newInstance(): DriverRowsRelation = copy(output = output.map(_.newInstance()))
  override def simpleString(maxFields: Int): String = s"${source.describe} ${output.mkString(", ")}"
}

object DriverRowsRelation {
  def apply(source: DriverRows): DriverRowsRelation =
    DriverRowsRelation(
      source,
      source.schema.map { f =>
        AttributeReference(f.name, f.dataType, f.nullable, f.metadata)()
      })
}

/** Computes [[DriverRows]] on the driver when the plan executes; one partition. */
final case class DriverRowsExec(source: DriverRows, output: Seq[Attribute]) extends LeafExecNode {
  private def unsafeRows(): Array[InternalRow] = {
    val toCatalyst = CatalystTypeConverters.createToCatalystConverter(source.schema)
    val project = UnsafeProjection.create(source.schema)
    source.rows(session).map { row =>
      project(toCatalyst(row).asInstanceOf[InternalRow]).copy(): InternalRow
    }.toArray
  }

  override def executeCollect(): Array[InternalRow] = unsafeRows()

  override protected def doExecute(): RDD[InternalRow] =
    sparkContext.parallelize(unsafeRows().toSeq, 1)

  override def simpleString(maxFields: Int): String = s"${source.describe} ${output.mkString(", ")}"
}

/** Plans [[DriverRowsRelation]]s (whether or not skewagg is enabled: they only answer). */
object PlanDriverRows extends SparkStrategy {
  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case r: DriverRowsRelation => DriverRowsExec(r.source, r.output) :: Nil
    case _ => Nil
  }
}
