package org.apache.spark.sql.skewagg

import org.apache.spark.SparkContext
import org.apache.spark.sql.SparkSession

/** A new session on a running SparkContext, with the extensions its conf names. */
object NewSessions {
  def on(sc: SparkContext): SparkSession = new SparkSession(sc)
}
