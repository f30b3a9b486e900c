package org.apache.spark.sql.skewagg

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.classic
import org.apache.spark.sql.internal.SessionState

/** What differs between Spark lines, for Spark 4.0. */
object SparkShims {
  /** Extensions receive the API-level session; on 4.0 its implementation is the classic one. */
  def sessionState(session: SparkSession): SessionState =
    session.asInstanceOf[classic.SparkSession].sessionState
}
