package org.apache.spark.sql.skewagg

import org.apache.spark.{SparkConf, SparkContext}
import org.apache.spark.internal.config.{
  CPUS_PER_TASK, DYN_ALLOCATION_MAX_EXECUTORS, EXECUTOR_CORES
}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.util.Utils

/**
 * The task slots a split is planned for: `spark.skewagg.skew.taskSlots` when set, else the
 * running application's (executors x cores per executor / cpus per task, Spark's own count for
 * barrier stages), else its default parallelism while no executor has registered yet.
 *
 * Under dynamic allocation the executors at decision time are those the stages before needed,
 * often far fewer than a long stage gets once its pending tasks ask for more
 * (docs/production.md, measured): there, a stage of `tasks` tasks is planned for as many slots
 * as it can get, `min(tasks, spark.dynamicAllocation.maxExecutors x slots per executor)`, and at
 * least the current ones.
 */
object TaskSlots {

  /** The slots a stage of `tasks` tasks runs on. */
  def of(conf: SQLConf, tasks: Int): Int = {
    val set = conf.getConf(SkewAggConf.SKEW_TASK_SLOTS)
    if (set > 0) return set
    SparkContext.getActive.map { sc =>
      val slots = sc.maxNumConcurrentTasks(sc.resourceProfileManager.defaultResourceProfile)
      val current = if (slots > 0) slots else sc.defaultParallelism
      if (!Utils.isDynamicAllocationEnabled(sc.conf)) current
      else math.max(current, math.min(tasks.toLong, dynamicMax(sc, slots)).toInt)
    }.filter(_ > 0).getOrElse(1)
  }

  /**
   * The most slots dynamic allocation can give: its executor limit times the slots of an
   * executor (`spark.executor.cores`, else those of the executors running now, else 1, over
   * `spark.task.cpus`).
   */
  private def dynamicMax(sc: SparkContext, currentSlots: Int): Long = {
    val conf: SparkConf = sc.conf
    val executors = sc.getExecutorIds().size
    val perExecutor = conf.getOption(EXECUTOR_CORES.key) match {
      // (spark.task.cpus is an int up to 4.2, a decimal from 4.3: read as text.)
      case Some(cores) =>
        val cpus = math.max(conf.get(CPUS_PER_TASK.key, "1").trim.toDouble, 1e-3)
        math.max((cores.trim.toInt / cpus).toInt, 1)
      case None if executors > 0 => math.max(currentSlots / executors, 1)
      case None => 1
    }
    conf.get(DYN_ALLOCATION_MAX_EXECUTORS).toLong * perExecutor
  }
}
