package org.apache.spark.sql.skewagg

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, SortOrder}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, ExprCode}
import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.{
  CodegenSupport, SQLExecution, SparkPlan, UnaryExecNode, WholeStageCodegenExec
}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}

/**
 * A node that names a skewagg rewrite in the executed plan: the local-stage marker of a rewritten
 * partial aggregate ([[SkewAggLocalStageExec]]), or an operator of skewagg's own that replaces
 * Spark's aggregate whole and carries no marker (one key at a time). The explanation lists them
 * as the skewagg operators that ran (`SkewAggExplain.operatorLines`).
 */
trait SkewAggRewriteExec { self: SparkPlan => }

/**
 * An operator of skewagg's own that replaces Spark's aggregate whole (one key at a time): the
 * explanation lists it as an aggregate, labelled by its logical aggregate, and prints `decision`.
 */
trait SkewAggAggregateExec extends SkewAggRewriteExec { self: SparkPlan =>
  def groupingAttributes: Seq[Attribute]

  /** What it did, with its numbers once it ran (keys, rows, hot keys split, splits). */
  def decision: String
}

/**
 * An operator of skewagg's own that replaces Spark's window (a window's hot keys split by
 * order): the explanation lists it as a window and prints `decision`.
 */
trait SkewAggWindowExec extends SkewAggRewriteExec { self: SparkPlan =>
  def partitionSpec: Seq[org.apache.spark.sql.catalyst.expressions.Expression]

  /** What it did, with its numbers once it ran (skewed partitions, hot keys, splits). */
  def decision: String

  /** It ran Spark's window: what it found when it ran did not make a split pay. */
  def leftAloneWhenRun: Boolean
}

/**
 * Marks, in the executed plan and the Spark UI, the local (partial) stage of an aggregate that a
 * skewagg rule rewrote: it sits directly above that partial aggregate, passes its rows through
 * unchanged (inside the aggregate's whole-stage codegen, if it has one), counts them, and names
 * the rewrite with the numbers it was decided on, e.g. `SkewAggLocalStage [skew split of the
 * join below the aggregate: partition 17 is 42.8 MiB, 54x the median 800.0 KiB]`.
 */
case class SkewAggLocalStageExec(
    child: SparkPlan,
    rewrite: SkewAggDecision.Rewritten,
    skewedPartitions: Int = 0)
    extends UnaryExecNode with CodegenSupport with SkewAggRewriteExec {

  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def outputOrdering: Seq[SortOrder] = child.outputOrdering

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of partial rows out"),
    "skewedPartitions" -> SQLMetrics.createMetric(sparkContext, "number of skewed partitions"))

  /**
   * Inside its child's whole-stage codegen only: above an operator without codegen (a flushing
   * partial aggregate of imperative functions) a codegen stage of its own would buffer every row
   * once more.
   */
  override def supportCodegen: Boolean = child match {
    case c: CodegenSupport => c.supportCodegen
    case _ => false
  }

  /**
   * The rewrite, and what rules decided about its next steps at run time
   * ([[RecordedDecisions.atRunTime]]: the merge after the join's shuffle, the join broadcast).
   */
  def decision: String =
    (rewrite.what +: RecordedDecisions.atRunTime(this).map(_.what)).mkString("; ")

  override def simpleString(maxFields: Int): String = s"SkewAggLocalStage [$decision]"
  override def nodeName: String = "SkewAggLocalStage"

  /** The planning-time numbers, posted once per execution as driver-side metrics. */
  private def postDriverMetrics(): Unit = {
    val metric = longMetric("skewedPartitions")
    metric.set(skewedPartitions.toLong)
    val executionId = sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY)
    SQLMetrics.postDriverMetricUpdates(sparkContext, executionId, Seq(metric))
  }

  override protected def doExecute(): RDD[InternalRow] = {
    postDriverMetrics()
    val rows = longMetric("numOutputRows")
    child.execute().mapPartitionsInternal { it => it.map { r => rows += 1; r } }
  }

  override def inputRDDs(): Seq[RDD[InternalRow]] = {
    postDriverMetrics()
    child.asInstanceOf[CodegenSupport].inputRDDs()
  }

  override protected def doProduce(ctx: CodegenContext): String =
    child.asInstanceOf[CodegenSupport].produce(ctx, this)

  /**
   * A row its child gives as a plain variable goes on as that same row (no copy into a row of
   * its own), so a child emitting several rows per input row can tell when its rows reach the
   * stage's output as it emitted them ([[emitsRowsAsGiven]]).
   */
  override def doConsume(ctx: CodegenContext, input: Seq[ExprCode], row: ExprCode): String = {
    val rows = metricTerm(ctx, "numOutputRows")
    val asGiven = row != null && row.code.isEmpty
    val consumed = if (asGiven) consume(ctx, input, row.value.toString) else consume(ctx, input)
    s"$rows.add(1);\n$consumed"
  }

  /** Whether the rows a child gives as variables reach the stage's output buffer unchanged. */
  def emitsRowsAsGiven: Boolean = parent.isInstanceOf[WholeStageCodegenExec]

  override protected def withNewChildInternal(newChild: SparkPlan): SkewAggLocalStageExec =
    copy(child = newChild)
}

object SkewAggLocalStageExec {

  /**
   * `plan` (a partial aggregate) under a local-stage marker of the rewrite `rewrite` (what it
   * did, with its numbers), unless already marked.
   */
  def mark(
      plan: SparkPlan,
      rewrite: SkewAggDecision.Rewritten,
      skewedPartitions: Int = 0): SparkPlan = plan match {
    case marked: SkewAggLocalStageExec => marked
    case other => SkewAggLocalStageExec(other, rewrite, skewedPartitions)
  }

  /**
   * "partition 17 is 42.8 MiB, 54x the median 800.0 KiB; 30% of the stage, 19x the per-slot share
   * on 64 slots" for the largest skewed partition.
   */
  def describe(what: String, skew: SkewedPartitions): String = skew.skewed.sortBy(-_._2).headOption
    .map { case (id, size) =>
      val ratio =
        if (skew.medianSize > 0) f"${size.toDouble / skew.medianSize}%.0fx" else "many times"
      val more = if (skew.skewed.size > 1) s" (and ${skew.skewed.size - 1} more skewed)" else ""
      val share =
        if (skew.total > 0 && skew.slotShare > 0) {
          f"; ${100.0 * size / skew.total}%.0f%% of the stage, " +
            f"${size.toDouble / skew.slotShare}%.0fx the per-slot share on ${skew.slots} slots"
        } else ""
      s"$what $id is ${skew.format(size)}, $ratio the median ${skew.format(skew.medianSize)}" +
        s"$share$more"
    }.getOrElse(s"no skewed $what")

  def bytes(n: Long): String = org.apache.spark.util.Utils.bytesToString(n)
}
