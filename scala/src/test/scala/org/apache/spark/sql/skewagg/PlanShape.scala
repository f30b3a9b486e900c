package org.apache.spark.sql.skewagg

import org.apache.spark.sql.execution.SparkPlan

/** Plan shapes: plans compared without the ids that differ between two runs of one query. */
object PlanShape {

  /**
   * The plan's tree string without expression ids, plan ids and codegen stage ids: equal for two
   * plans of the same shape, including adaptive final plans.
   */
  def of(plan: SparkPlan): String = plan.treeString
    .replaceAll("#\\d+L?", "#")
    .replaceAll("plan_id=\\d+", "plan_id")
    .replaceAll("\\*\\(\\d+\\)", "*")
    .replaceAll("QueryStage \\d+", "QueryStage")
    .replaceAll("/tmp/[^,\\]]*", "/tmp")

  /**
   * `shape` without the SKEW_AGG / NO_SKEW_AGG hints that logical plans print on aggregates
   * (adaptive plans print the logical plans of empty relations and pending stages): a session
   * without skewagg drops the hints, which change no operator.
   */
  def withoutHints(shape: String): String =
    shape.replaceAll(", SkewAggHint\\([^()]*\\([^()]*\\)\\)", "")

  /**
   * Equal plan shapes, or equal up to the order of items within a line: Spark's
   * RewriteDistinctAggregates orders the Expand projections of several DISTINCT groups by
   * hash (a HashMap keyed by sets of expressions whose hashes include expression ids), and ids
   * differ between two analyses of the same query. Operators and lines, in order, still match.
   */
  def sameUpToOrder(a: String, b: String): Boolean = {
    def tokens(plan: String) = plan.split("\n").toSeq
      .map(line => "[A-Za-z_][A-Za-z0-9_.]*|\\d+|[^\\s,\\[\\]()]".r.findAllIn(line).toSeq.sorted)
    a == b || tokens(a) == tokens(b)
  }
}
