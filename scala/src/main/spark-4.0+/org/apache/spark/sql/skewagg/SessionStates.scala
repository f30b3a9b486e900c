package org.apache.spark.sql.skewagg

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.classic
import org.apache.spark.sql.internal.{SessionState, SQLConf}

/** The session state behind the API-level session that extensions receive. */
object SessionStates {

  /** On every supported line an extension's session is the classic one. */
  def of(session: SparkSession): SessionState =
    session.asInstanceOf[classic.SparkSession].sessionState

  /** The session's SQL settings (for callers outside Spark's packages). */
  def conf(session: SparkSession): SQLConf = of(session).conf
}
