package io.skewagg.functions

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.skewagg.monitor.TaggedTaskTimes
import org.apache.spark.sql.types.{IntegerType, LongType, StringType, StructField, StructType}

/**
 * `skewagg_task_times(tag)`: one row per successful task of the jobs tagged `tag` (a tag starting
 * with `skewagg-`, added with `spark.addTag` before they ran), read once ([[TaggedTaskTimes]]):
 * the task times behind `skewagg.stage_report` for clients that cannot attach a listener to the
 * driver (Spark Connect, SQL).
 */
object TaskTimesFunction {
  val name = "skewagg_task_times"

  val description: (FunctionIdentifier, ExpressionInfo, Seq[Expression] => LogicalPlan) = (
    FunctionIdentifier(name),
    FunctionInfo(
      getClass.getName.stripSuffix("$"),
      name,
      "_FUNC_(tag) - One row per successful task of the jobs tagged tag (a job tag starting " +
        s"with '${TaggedTaskTimes.Prefix}'), by stage; each tag's tasks are returned once.",
      """
    Arguments:
      * tag - the job tag the queries ran with (spark.addTag), starting with 'skewagg-'
  """,
      """
    Examples:
      > SELECT stage, max(duration_ms) FROM _FUNC_('skewagg-nightly') GROUP BY stage;
  """,
      "table_funcs"),
    build)

  private def build(args: Seq[Expression]): LogicalPlan = args match {
    case Seq(tag) if tag.dataType == StringType =>
      val text = String.valueOf(FunctionInfo.literal(name, "the tag", tag))
      if (!text.startsWith(TaggedTaskTimes.Prefix)) {
        throw new IllegalArgumentException(
          s"$name reads the jobs of a tag starting with '${TaggedTaskTimes.Prefix}' (only those " +
            s"are recorded), but was given '$text': run the queries after " +
            s"spark.addTag('${TaggedTaskTimes.Prefix}$text').")
      }
      DriverRowsRelation(TaskTimeRows(text))
    case _ => throw new IllegalArgumentException(
        s"$name takes one argument, the job tag as a string literal: $name('skewagg-my-tag').")
  }

  private final case class TaskTimeRows(tag: String) extends DriverRows {
    override val schema: StructType = StructType(
      Seq(
        "stage" -> IntegerType,
        "attempt" -> IntegerType,
        "stage_name" -> StringType,
        "task" -> IntegerType,
        "duration_ms" -> LongType,
        "run_ms" -> LongType,
        "records" -> LongType,
        "bytes" -> LongType,
        "peak_execution_memory" -> LongType,
        "disk_spilled" -> LongType,
        "jvm_heap_peak" -> LongType)
        .map { case (field, kind) => StructField(field, kind, nullable = false) })
    override def describe: String = s"$name($tag)"

    override def rows(session: SparkSession): Seq[Row] = TaggedTaskTimes.take(tag).flatMap { s =>
      s.tasks.map { t =>
        Row(
          s.stage,
          s.attempt,
          s.name,
          t.index,
          t.durationMs,
          t.runMs,
          t.records,
          t.bytes,
          t.peakExecutionMemory,
          t.diskSpilled,
          t.jvmHeapPeak)
      }
    }
  }
}
