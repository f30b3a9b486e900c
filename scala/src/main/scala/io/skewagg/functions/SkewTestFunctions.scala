package io.skewagg.functions

import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo, Literal}
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{SkewAggConf, SkewedPartitions, TaskSlots}
import org.apache.spark.sql.types.{ArrayType, ByteType, IntegerType, LongType, ShortType}

/**
 * The rules' own skew test and task slots as SQL functions, so that a client without the driver's
 * JVM at hand (Spark Connect, SQL) decides as the rules do (`skewagg.analyze`). Both answer with
 * the session's settings when the query is analyzed, from literal arguments.
 */
object SkewTestFunctions {
  val skewTestName = "skewagg_skew_test"
  val taskSlotsName = "skewagg_task_slots"

  private type Description = (FunctionIdentifier, ExpressionInfo, Seq[Expression] => Expression)

  /**
   * `skewagg_skew_test(sizes)`: the rules' skew test on partition sizes in bytes, as JSON: the
   * median, the threshold, the settings it used (factor, floor, the size of the pieces a skewed
   * partition is read in, task slots), the total and the skewed partitions as [id, bytes],
   * largest first.
   */
  val skewTest: Description = (
    FunctionIdentifier(skewTestName),
    FunctionInfo(
      getClass.getName.stripSuffix("$"),
      skewTestName,
      "_FUNC_(sizes) - skewagg's skew test on partition sizes in bytes, under this session's " +
        "settings, as JSON: median, threshold, factor, floor, split, slots, total, skewed " +
        "([partition, bytes], largest first).",
      """
    Arguments:
      * sizes - a literal array of integers: each partition's size in bytes
  """,
      """
    Examples:
      > SELECT _FUNC_(array(1000, 1000, 900000000));
  """,
      "misc_funcs"),
    {
      case Seq(sizes) =>
        AnsweredAtAnalysis(
          Literal(skewTestJson(longsOf(sizes), SQLConf.get)),
          s"$skewTestName(...)")
      case args => throw new IllegalArgumentException(
          s"$skewTestName takes one argument, the partition sizes (an array literal), but was " +
            s"given ${args.size}.")
    })

  /** `skewagg_task_slots([tasks])`: the task slots a stage of `tasks` tasks is planned for. */
  val taskSlots: Description = (
    FunctionIdentifier(taskSlotsName),
    FunctionInfo(
      getClass.getName.stripSuffix("$"),
      taskSlotsName,
      "_FUNC_([tasks]) - The task slots skewagg plans a stage of tasks tasks for (default: " +
        "spark.sql.shuffle.partitions): spark.skewagg.skew.taskSlots if set, else the " +
        "application's.",
      """
    Arguments:
      * tasks - the stage's task count, an integer literal
  """,
      """
    Examples:
      > SELECT _FUNC_();
  """,
      "misc_funcs"),
    {
      case Seq() => AnsweredAtAnalysis(
          Literal(TaskSlots.of(SQLConf.get, SQLConf.get.numShufflePartitions)),
          s"$taskSlotsName()")
      case Seq(tasks) if Seq(IntegerType, LongType).contains(tasks.dataType) =>
        val n = FunctionInfo.literal(taskSlotsName, "tasks", tasks).asInstanceOf[Number]
        val slots = TaskSlots.of(SQLConf.get, math.min(n.longValue, Int.MaxValue).toInt)
        AnsweredAtAnalysis(Literal(slots), s"$taskSlotsName($n)")
      case args => throw new IllegalArgumentException(
          s"$taskSlotsName takes no argument or one, a stage's task count (an integer literal), " +
            s"but was given ${args.map(_.sql).mkString(", ")}.")
    })

  private def longsOf(sizes: Expression): Array[Long] = sizes.dataType match {
    case ArrayType(IntegerType | LongType | ShortType | ByteType, _) =>
      val data = FunctionInfo.literal(skewTestName, "the sizes", sizes).asInstanceOf[ArrayData]
      val element = sizes.dataType.asInstanceOf[ArrayType].elementType
      if (data == null) Array.empty
      else data.toSeq[Any](element).map(v => Option(v).fold(0L)(_.asInstanceOf[Number].longValue))
        .toArray
    case other => throw new IllegalArgumentException(
        s"$skewTestName takes the partition sizes as an array of integers, but was given " +
          s"${other.sql}.")
  }

  /** The skew test's answer, as JSON (see [[skewTest]]). */
  def skewTestJson(bytes: Array[Long], conf: SQLConf): String = {
    val skew = SkewedPartitions.find(bytes, conf)
    val skewed = skew.skewed.sortBy(-_._2).map { case (id, size) => s"[$id,$size]" }
    s"""{"median":${skew.medianSize},"threshold":${skew.threshold},""" +
      s""""factor":${conf.getConf(SkewAggConf.SKEW_FACTOR)},""" +
      s""""floor":${conf.getConf(SkewAggConf.SKEW_MIN_PARTITION_SIZE)},""" +
      s""""split":${SkewedPartitions.pieceSize(bytes, skew, conf)},""" +
      s""""slots":${skew.slots},"total":${skew.total},""" +
      s""""skewed":[${skewed.mkString(",")}]}"""
  }
}
