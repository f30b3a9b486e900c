package org.apache.spark.sql.skewagg

import org.apache.spark.SparkConf
import org.apache.spark.sql.RuntimeConfig

/** Settings changed for a block and restored after it, whether it returns or throws. */
object ConfScopes {

  /**
   * Runs `body`, then gives `keys` of the session's `conf` the values set before (or unsets them
   * where none was set: a default read back and set would stay set).
   */
  def restoring[T](conf: RuntimeConfig, keys: Seq[String])(body: => T): T = {
    val set = conf.getAll
    val saved = keys.map(k => k -> set.get(k))
    try body
    finally saved.foreach {
        case (k, Some(v)) => conf.set(k, v)
        case (k, None) => conf.unset(k)
      }
  }

  /** Runs `body` with the session settings `pairs` (a null value unsets the key). */
  def withSession[T](conf: RuntimeConfig, pairs: (String, String)*)(body: => T): T =
    restoring(conf, pairs.map(_._1)) {
      pairs.foreach {
        case (k, null) => conf.unset(k)
        case (k, v) => conf.set(k, v)
      }
      body
    }

  /**
   * Runs `body` with the SparkContext config `conf` holding `pairs` (None removes the key): read
   * by what a new session or a new shuffle reads from it.
   */
  def withSparkConf[T](conf: SparkConf, pairs: (String, Option[String])*)(body: => T): T = {
    val saved = pairs.map { case (k, _) => k -> conf.getOption(k) }
    pairs.foreach { case (k, v) => v.fold(conf.remove(k))(conf.set(k, _)) }
    try body
    finally saved.foreach { case (k, v) => v.fold(conf.remove(k))(conf.set(k, _)) }
  }
}
