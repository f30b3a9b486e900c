package io.skewagg

import java.util.concurrent.ConcurrentHashMap

import org.apache.commons.text.similarity.LevenshteinDistance

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.SkewAggConf

/**
 * Analysis check: a `spark.skewagg.*` key set in the session that is not a skewagg setting (a
 * typo, such as `spark.skewagg.skew.facter`) has no effect, so the first query analyzed after it
 * was set logs a warning naming the key and the closest setting. A warning, not an error: adding
 * skewagg to a job must never make it fail, and Spark itself accepts unknown keys.
 */
case class WarnUnknownSkewAggSettings(session: SparkSession) extends (LogicalPlan => Unit)
    with Logging {
  override def apply(plan: LogicalPlan): Unit =
    WarnUnknownSkewAggSettings.unknownKeys(session.sessionState.conf)
      .filter(WarnUnknownSkewAggSettings.warned.add)
      .foreach(key => logWarning(WarnUnknownSkewAggSettings.message(key)))
}

object WarnUnknownSkewAggSettings {

  /** Keys warned about in this JVM: one warning per key (as many as distinct typos). */
  private val warned = ConcurrentHashMap.newKeySet[String]()

  private val known: Set[String] = SkewAggConf.entries.map(_.key).toSet

  /** The `spark.skewagg.*` keys set in `conf` that are not skewagg settings, sorted. */
  def unknownKeys(conf: SQLConf): Seq[String] =
    conf.getAllConfs.keys.filter(k => k.startsWith("spark.skewagg.") && !known(k)).toSeq.sorted

  def message(key: String): String = {
    // Spark's own suggestion distance (commons-text, a Spark dependency).
    val distance = LevenshteinDistance.getDefaultInstance
    val closest = SkewAggConf.entries.map(_.key).minBy(distance.apply(key, _).intValue)
    s"$key is not a skewagg setting and has no effect; did you mean $closest? " +
      "The settings are listed in docs/configs.md."
  }
}
