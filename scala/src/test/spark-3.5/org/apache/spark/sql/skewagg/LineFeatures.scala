package org.apache.spark.sql.skewagg

import org.apache.spark.SparkThrowable
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.internal.SessionState
import org.apache.spark.sql.types.DataType

/** What tests read of a Spark line that the lines name or have differently. */
object LineFeatures {

  /** Spark 3.5 has no VARIANT type. */
  val variants: Boolean = false
  def isVariant(dataType: DataType): Boolean = false

  /** Spark 3.5 replaces an empty adaptive plan by an empty local relation, not EmptyRelation. */
  def emptyRelation(plan: SparkPlan): Boolean = false

  /** Spark 3.5 has `mode(col)` only: no `mode() WITHIN GROUP`, no `mode(col, deterministic)`. */
  val orderedMode: Boolean = false

  /** Spark 3.5 has no collations. */
  val collations: Boolean = false

  /** Spark 3.5's EXPLAIN has no extended explain providers. */
  val explainProviders: Boolean = false

  /**
   * Spark 3.5 refuses a correlated subquery with LIMIT or OFFSET (ACCESSING_OUTER_QUERY_COLUMN_IS_
   * NOT_ALLOWED, without skewagg too): its optimizer builds no window from one.
   */
  val correlatedLimits: Boolean = false

  /** What Spark's error says of a negative frequency of percentile (3.5: not the value). */
  val negativeFrequencyText: String = "Negative values found"

  /**
   * Hints ride on the result ids of the aggregate functions (AggregateHintCarrier), which Spark's
   * rewrite of several DISTINCTs carries into the aggregates it builds.
   */
  val hintsOnResultIds: Boolean = true

  /** The error's class, as Spark 3.5 names it. */
  def errorCondition(e: SparkThrowable): String = e.getErrorClass

  /** Spark 3.5 has no hint resolution hook: skewagg's hint rule is a resolution rule. */
  def hintResolutionRules(state: SessionState): Seq[Rule[LogicalPlan]] =
    state.analyzer.extendedResolutionRules
}
