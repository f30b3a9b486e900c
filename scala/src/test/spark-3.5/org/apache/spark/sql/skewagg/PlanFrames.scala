package org.apache.spark.sql.skewagg

import org.apache.spark.sql.{DataFrame, Dataset, SparkSession}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/** A DataFrame of a plan already parsed: the session analyzes it as it would its SQL text. */
object PlanFrames {
  def of(spark: SparkSession, plan: LogicalPlan): DataFrame = Dataset.ofRows(spark, plan)
}
