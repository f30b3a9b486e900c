package org.apache.spark.sql.skewagg.monitor

import scala.collection.mutable

import org.apache.spark.SparkContext
import org.apache.spark.scheduler.{SparkListener, SparkListenerStageSubmitted, SparkListenerTaskEnd}

/**
 * Records, per stage, how long each task took and how much it read: the numbers behind the
 * benchmark suite's hot/median task times and simulated makespans, and behind
 * `skewagg.stage_report` for users' own queries. Driver-side only; it keeps the tasks recorded
 * since the last [[clear]], so a long session holds at most one query's worth of tasks.
 *
 * {{{
 *   val recorder = TaskTimeRecorder.attach(sc)
 *   df.collect()
 *   val json = recorder.snapshotJson()   // waits for the listener bus to deliver every event
 * }}}
 */
class TaskTimeRecorder private (sc: SparkContext) extends SparkListener {
  private case class Task(
      index: Int,
      durationMs: Long,
      runMs: Long,
      records: Long,
      bytes: Long,
      peakExecutionMemory: Long,
      diskSpilled: Long,
      jvmHeapPeak: Long)
  private val names = mutable.LinkedHashMap.empty[(Int, Int), String]
  private val tasks = mutable.LinkedHashMap.empty[(Int, Int), mutable.ArrayBuffer[Task]]

  override def onStageSubmitted(event: SparkListenerStageSubmitted): Unit = synchronized {
    val info = event.stageInfo
    names((info.stageId, info.attemptNumber())) = info.name
  }

  override def onTaskEnd(event: SparkListenerTaskEnd): Unit = synchronized {
    val info = event.taskInfo
    val metrics = Option(event.taskMetrics)
    if (info != null && info.successful) {
      val shuffle = metrics.map(_.shuffleReadMetrics)
      val input = metrics.map(_.inputMetrics)
      val records =
        shuffle.map(_.recordsRead).getOrElse(0L) + input.map(_.recordsRead).getOrElse(0L)
      val bytes = shuffle.map(_.totalBytesRead).getOrElse(0L) + input.map(_.bytesRead).getOrElse(0L)
      tasks.getOrElseUpdate((event.stageId, event.stageAttemptId), mutable.ArrayBuffer.empty) +=
        Task(
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

  /** Forgets every task recorded so far (call before the query to measure). */
  def clear(): Unit = {
    sc.listenerBus.waitUntilEmpty()
    synchronized { names.clear(); tasks.clear() }
  }

  /**
   * Every stage attempt recorded since [[clear]], as JSON: a list of
   * `{"stage", "attempt", "name", "tasks": [{"index", "durationMs", "runMs", "records", "bytes",
   * "peakExecutionMemory", "diskSpilled", "jvmHeapPeak"}]}` (the last: the executor JVM's peak heap
   * while the task ran, from Spark's executor metrics)
   * in the order the stages were submitted.
   */
  def snapshotJson(): String = {
    sc.listenerBus.waitUntilEmpty()
    synchronized {
      tasks.toSeq.sortBy(_._1).map { case ((stage, attempt), ts) =>
        val name = names.getOrElse((stage, attempt), "").replace("\\", "\\\\").replace("\"", "\\\"")
        val taskJson = ts.sortBy(_.index).map { t =>
          s"""{"index":${t.index},"durationMs":${t.durationMs},"runMs":${t.runMs},""" +
            s""""records":${t.records},"bytes":${t.bytes},"peakExecutionMemory":""" +
            s"""${t.peakExecutionMemory},"diskSpilled":${t.diskSpilled},"jvmHeapPeak":${t
                .jvmHeapPeak}}"""
        }.mkString("[", ",", "]")
        s"""{"stage":$stage,"attempt":$attempt,"name":"$name","tasks":$taskJson}"""
      }.mkString("[", ",", "]")
    }
  }

  /** Stops recording. */
  def detach(): Unit = sc.removeSparkListener(this)
}

object TaskTimeRecorder {
  def attach(sc: SparkContext): TaskTimeRecorder = {
    val recorder = new TaskTimeRecorder(sc)
    sc.addSparkListener(recorder)
    recorder
  }
}
