package org.apache.spark.sql.skewagg.monitor

import scala.collection.mutable

import org.apache.spark.scheduler.{StageInfo, SparkListenerTaskEnd}

/** One successful task as recorded: its index in the stage, times, what it read, its memory. */
final case class RecordedTask(
    index: Int,
    durationMs: Long,
    runMs: Long,
    records: Long,
    bytes: Long,
    peakExecutionMemory: Long,
    diskSpilled: Long,
    jvmHeapPeak: Long)

/** One stage attempt as recorded: its id, attempt, name and tasks (in index order). */
final case class RecordedStage(stage: Int, attempt: Int, name: String, tasks: Seq[RecordedTask])

/**
 * The tasks of stage attempts, recorded from listener events: what [[TaskTimeRecorder]] and
 * [[TaggedTaskTimes]] keep. Not thread-safe: its listener serializes the calls.
 */
final class RecordedStages {
  private val names = mutable.LinkedHashMap.empty[(Int, Int), String]
  private val tasks = mutable.LinkedHashMap.empty[(Int, Int), mutable.ArrayBuffer[RecordedTask]]

  def submitted(info: StageInfo): Unit = names((info.stageId, info.attemptNumber())) = info.name

  /** Records `event`'s task if it succeeded. */
  def ended(event: SparkListenerTaskEnd): Unit = {
    val info = event.taskInfo
    val metrics = Option(event.taskMetrics)
    if (info != null && info.successful) {
      val shuffle = metrics.map(_.shuffleReadMetrics)
      val input = metrics.map(_.inputMetrics)
      val records =
        shuffle.map(_.recordsRead).getOrElse(0L) + input.map(_.recordsRead).getOrElse(0L)
      val bytes = shuffle.map(_.totalBytesRead).getOrElse(0L) + input.map(_.bytesRead).getOrElse(0L)
      tasks.getOrElseUpdate((event.stageId, event.stageAttemptId), mutable.ArrayBuffer.empty) +=
        RecordedTask(
          info.index,
          info.duration,
          metrics.map(_.executorRunTime).getOrElse(0L),
          records,
          bytes,
          metrics.map(_.peakExecutionMemory).getOrElse(0L),
          metrics.map(_.diskBytesSpilled).getOrElse(0L),
          Option(event.taskExecutorMetrics).map(_.getMetricValue("JVMHeapMemory")).getOrElse(0L))
    }
  }

  /** Every stage attempt with a recorded task, by stage and attempt. */
  def stages: Seq[RecordedStage] = tasks.toSeq.sortBy(_._1).map { case ((stage, attempt), ts) =>
    RecordedStage(stage, attempt, names.getOrElse((stage, attempt), ""), ts.sortBy(_.index).toSeq)
  }

  def clear(): Unit = {
    names.clear()
    tasks.clear()
  }
}
