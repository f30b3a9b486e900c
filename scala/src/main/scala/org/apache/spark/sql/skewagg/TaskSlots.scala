package org.apache.spark.sql.skewagg

import org.apache.spark.SparkContext
import org.apache.spark.sql.internal.SQLConf

/**
 * The task slots a split is planned for: `spark.skewagg.skew.taskSlots` when set, else the
 * running application's (executors x cores per executor / cpus per task, Spark's own count for
 * barrier stages), else its default parallelism while no executor has registered yet.
 */
object TaskSlots {
  def of(conf: SQLConf): Int = {
    val set = conf.getConf(SkewAggConf.SKEW_TASK_SLOTS)
    if (set > 0) return set
    SparkContext.getActive.map { sc =>
      val slots = sc.maxNumConcurrentTasks(sc.resourceProfileManager.defaultResourceProfile)
      if (slots > 0) slots else sc.defaultParallelism
    }.filter(_ > 0).getOrElse(1)
  }
}
