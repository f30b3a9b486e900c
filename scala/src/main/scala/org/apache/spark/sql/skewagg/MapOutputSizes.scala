package org.apache.spark.sql.skewagg

import org.apache.spark.{MapOutputTrackerMaster, SparkEnv}

/** The sizes of a finished shuffle's map outputs, as Spark's map output tracker has them. */
object MapOutputSizes {

  /** The bytes each map task wrote for `reducer` of shuffle `shuffleId` (-1: no status). */
  def of(shuffleId: Int, reducer: Int): Array[Long] = {
    val tracker = SparkEnv.get.mapOutputTracker.asInstanceOf[MapOutputTrackerMaster]
    tracker.shuffleStatuses(shuffleId).withMapStatuses(_.map { status =>
      if (status == null) -1L else status.getSizeForBlock(reducer)
    })
  }
}
