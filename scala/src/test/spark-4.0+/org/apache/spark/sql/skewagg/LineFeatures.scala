package org.apache.spark.sql.skewagg

import org.apache.spark.SparkThrowable
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{EmptyRelationExec, SparkPlan}
import org.apache.spark.sql.internal.SessionState
import org.apache.spark.sql.types.{DataType, VariantType}

/** What tests read of a Spark line that the lines name or have differently. */
object LineFeatures {

  /** The VARIANT type (Spark 4.0+). */
  val variants: Boolean = true
  def isVariant(dataType: DataType): Boolean = dataType.isInstanceOf[VariantType]

  /** Adaptive execution replaced the plan by an empty result (Spark 4.0+). */
  def emptyRelation(plan: SparkPlan): Boolean = plan.isInstanceOf[EmptyRelationExec]

  /** `mode() WITHIN GROUP (ORDER BY ...)` and `mode(col, deterministic)` (Spark 4.0+). */
  val orderedMode: Boolean = true

  /** Collated strings (Spark 4.0+). */
  val collations: Boolean = true

  /** Extended explain providers, `spark.sql.extendedExplainProviders` (Spark 4.0+). */
  val explainProviders: Boolean = true

  /** Correlated subqueries with LIMIT or OFFSET, decorrelated into windows (Spark 4.0+). */
  val correlatedLimits: Boolean = true

  /** What Spark's error says of a negative frequency of percentile: the value. */
  val negativeFrequencyText: String = "-1"

  /**
   * Hints ride on `Aggregate.hint`, which the aggregates Spark's rewrite of several DISTINCTs
   * builds do not have.
   */
  val hintsOnResultIds: Boolean = false

  /** The error's condition (Spark 4.0+'s name for the error class). */
  def errorCondition(e: SparkThrowable): String = e.getCondition

  /** The analyzer's hint resolution rules, where skewagg's hint rule is registered. */
  def hintResolutionRules(state: SessionState): Seq[Rule[LogicalPlan]] =
    state.analyzer.hintResolutionRules
}
