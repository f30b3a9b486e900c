package org.apache.spark.sql.skewagg.monitor

import scala.collection.mutable
import scala.util.Try

import org.apache.spark.SparkContext
import org.apache.spark.scheduler.{
  SparkListener, SparkListenerJobEnd, SparkListenerJobStart, SparkListenerStageSubmitted,
  SparkListenerTaskEnd
}

/**
 * The task times of the jobs that carry a job tag starting with [[Prefix]], kept per tag until
 * read: how a client with no access to the driver's listeners (Spark Connect, SQL) measures its
 * own queries. `skewagg.stage_report` tags its jobs (`spark.addTag`) and reads them back with
 * `SELECT * FROM skewagg_task_times('<tag>')`.
 *
 * Spark Connect prefixes a client's tag (`..._Tag_<tag>`), classic sessions too (on Spark 4), so
 * a tag is read back from every job tag that ends with it. At most [[KeptTags]] tags are kept,
 * the oldest dropped first. Attached once per SparkContext by the extension.
 */
object TaggedTaskTimes {
  val Prefix = "skewagg-"
  val KeptTags = 64

  /** The property through which Spark hands a job its tags (SparkContext.SPARK_JOB_TAGS). */
  private val JobTagsProperty = "spark.job.tags"

  @volatile private var context: Option[SparkContext] = None
  private val byTag = mutable.LinkedHashMap.empty[String, RecordedStages]
  private val stageTags = mutable.Map.empty[Int, Seq[String]]
  private val jobStages = mutable.Map.empty[Int, Seq[Int]]

  /** Records the tagged jobs of the running SparkContext from now on (once per SparkContext). */
  def attachToActiveContext(): Unit = SparkContext.getActive.foreach(attachOnce)

  private def attachOnce(sc: SparkContext): Unit = synchronized {
    if (!context.contains(sc)) {
      context = Some(sc)
      byTag.clear()
      stageTags.clear()
      jobStages.clear()
      sc.addSparkListener(Listener)
    }
  }

  private object Listener extends SparkListener {
    override def onJobStart(event: SparkListenerJobStart): Unit = {
      val tags = Option(event.properties).flatMap(p => Option(p.getProperty(JobTagsProperty)))
        .toSeq.flatMap(_.split(",")).map(_.trim).filter(_.contains(Prefix))
      if (tags.nonEmpty) TaggedTaskTimes.synchronized {
        jobStages(event.jobId) = event.stageIds
        event.stageIds.foreach(id => stageTags(id) = tags)
        tags.foreach { tag =>
          if (!byTag.contains(tag)) {
            byTag(tag) = new RecordedStages
            if (byTag.size > KeptTags) byTag.remove(byTag.head._1)
          }
        }
      }
    }

    override def onStageSubmitted(event: SparkListenerStageSubmitted): Unit =
      TaggedTaskTimes.synchronized {
        recordersOf(event.stageInfo.stageId).foreach(_.submitted(event.stageInfo))
      }

    override def onTaskEnd(event: SparkListenerTaskEnd): Unit = TaggedTaskTimes.synchronized {
      recordersOf(event.stageId).foreach(_.ended(event))
    }

    override def onJobEnd(event: SparkListenerJobEnd): Unit = TaggedTaskTimes.synchronized {
      jobStages.remove(event.jobId).foreach(_.foreach(stageTags.remove))
    }
  }

  private def recordersOf(stage: Int): Seq[RecordedStages] =
    stageTags.getOrElse(stage, Nil).flatMap(byTag.get)

  /**
   * The stages recorded for the jobs tagged `tag` (every job tag ending with it), forgotten once
   * read; waits for every event posted so far to be delivered.
   */
  def take(tag: String): Seq[RecordedStage] = {
    // A bus that does not drain within Spark's wait (10 s): answer from what was delivered.
    context.foreach(sc => Try(sc.listenerBus.waitUntilEmpty()))
    synchronized {
      val tags = byTag.keys.filter(_.endsWith(tag)).toSeq
      val stages = tags.flatMap(byTag(_).stages)
      tags.foreach(byTag.remove)
      stages.groupBy(s => (s.stage, s.attempt)).values.map(_.head).toSeq
        .sortBy(s => (s.stage, s.attempt))
    }
  }
}
