package io.skewagg

import org.apache.spark.SparkContext
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.skewagg.explain.SkewAggExplain
import org.apache.spark.sql.skewagg.monitor.TaskTimeRecorder

/**
 * Every JVM entry point the Python package calls through py4j (`skewagg._bridge`): Python names
 * this object and the classes it returns, no other class, so the packages behind it can move.
 */
object PythonBridge {
  /** `skewagg.explain`: one paragraph per aggregate of an executed plan. */
  def explain(plan: SparkPlan): String = SkewAggExplain.explain(plan)

  /** The skewagg operators that ran in an executed plan, one line each. */
  def operatorLines(plan: SparkPlan): String = SkewAggExplain.operatorLines(plan)

  /** `skewagg.TaskTimeRecorder`: a listener recording task times until it is detached. */
  def attachTaskTimeRecorder(sc: SparkContext): TaskTimeRecorder = TaskTimeRecorder.attach(sc)
}
