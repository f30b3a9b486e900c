package org.apache.spark.sql.skewagg.monitor

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
  private val recorded = new RecordedStages

  override def onStageSubmitted(event: SparkListenerStageSubmitted): Unit = synchronized {
    recorded.submitted(event.stageInfo)
  }

  override def onTaskEnd(event: SparkListenerTaskEnd): Unit = synchronized {
    recorded.ended(event)
  }

  /** Forgets every task recorded so far (call before the query to measure). */
  def clear(): Unit = {
    sc.listenerBus.waitUntilEmpty()
    synchronized { recorded.clear() }
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
      recorded.stages.map { s =>
        val name = s.name.replace("\\", "\\\\").replace("\"", "\\\"")
        val taskJson = s.tasks.map { t =>
          s"""{"index":${t.index},"durationMs":${t.durationMs},"runMs":${t.runMs},""" +
            s""""records":${t.records},"bytes":${t.bytes},"peakExecutionMemory":""" +
            s"""${t.peakExecutionMemory},"diskSpilled":${t.diskSpilled},"jvmHeapPeak":${t
                .jvmHeapPeak}}"""
        }.mkString("[", ",", "]")
        s"""{"stage":${s.stage},"attempt":${s.attempt},"name":"$name","tasks":$taskJson}"""
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
