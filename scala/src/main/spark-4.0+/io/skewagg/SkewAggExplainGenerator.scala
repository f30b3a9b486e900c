package io.skewagg

import org.apache.spark.sql.ExtendedExplainGenerator
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.skewagg.explain.SkewAggExplain

/**
 * Adds a "skewagg" section to Spark's `EXPLAIN EXTENDED` / `df.explain("extended")` (and the
 * SQL tab of the UI): for every aggregate, whether skewagg rewrote it and why or why not.
 * Enabled by `spark.sql.extendedExplainProviders=io.skewagg.SkewAggExplainGenerator`, which
 * `skewagg.configure()` appends for PySpark. For adaptive queries, explain after the query ran:
 * skewagg decides from the sizes of shuffles that have run.
 */
class SkewAggExplainGenerator extends ExtendedExplainGenerator {
  override def title: String = "skewagg"
  override def generateExtendedInfo(plan: SparkPlan): String = SkewAggExplain.explain(plan)
}
