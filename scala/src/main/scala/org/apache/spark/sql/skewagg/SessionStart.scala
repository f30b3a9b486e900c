package org.apache.spark.sql.skewagg

import org.apache.spark.SparkContext

/** What skewagg checks when a session starts (the extension is applied). */
object SessionStart {

  /**
   * Registers skewagg's settings with SQLConf and checks the values of the running SparkContext's
   * config: an invalid one fails `getOrCreate()` with a message naming the key, instead of
   * failing the session's first query deep inside Spark's session-state construction.
   */
  def checkSkewAggValues(): Unit = {
    SkewAggConf.entries
    SparkContext.getActive.foreach(sc => SkewAggConf.checkValues(sc.conf))
  }
}
