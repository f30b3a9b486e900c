package org.apache.spark.sql.skewagg

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.internal.{SessionState, SQLConf}

/** The session state behind the session that extensions receive. */
object SessionStates {

  /** Spark 3.5 has one SparkSession class, which holds the session state. */
  def of(session: SparkSession): SessionState = session.sessionState

  /** The session's SQL settings (for callers outside Spark's packages). */
  def conf(session: SparkSession): SQLConf = of(session).conf
}
