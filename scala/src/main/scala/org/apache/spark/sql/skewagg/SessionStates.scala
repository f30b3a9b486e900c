package org.apache.spark.sql.skewagg

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.classic
import org.apache.spark.sql.internal.SessionState

/** The session state behind the API-level session that extensions receive. */
object SessionStates {
  /** On every supported line an extension's session is the classic one. */
  def of(session: SparkSession): SessionState =
    session.asInstanceOf[classic.SparkSession].sessionState
}
