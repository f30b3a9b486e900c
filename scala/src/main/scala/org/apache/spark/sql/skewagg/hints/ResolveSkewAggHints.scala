package org.apache.spark.sql.skewagg.hints

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Expression, Literal, NamedExpression}
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.skewagg.{
  AggregateHintCarrier, SkewAggAnalysisException, SkewAggHint, SkewAggHints
}
import org.apache.spark.sql.catalyst.rules.Rule

/**
 * Hint resolution: moves a SKEW_AGG / NO_SKEW_AGG hint onto the aggregate it is written on: the
 * first aggregate below the hint through unary operators (Project, Filter, Sort, aliases, ...);
 * without one, onto the windows below it ([[RestoreSkewAggHints]] tags them once they exist).
 * A hint with neither below it, or whose parameters are not column names, is an analysis
 * error; column names are checked against the aggregate's input by [[CheckSkewAggHints]] once
 * the plan is resolved.
 */
case class ResolveSkewAggHints(session: SparkSession) extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = plan.resolveOperatorsUp {
    case h: UnresolvedHint if isSkewAggHint(h.name) =>
      val force = h.name.equalsIgnoreCase(SkewAggHints.Force)
      if (!force && h.parameters.nonEmpty) {
        throw new SkewAggAnalysisException(
          s"${SkewAggHints.Forbid} hint takes no parameters, got " +
            s"${h.parameters.map(parameterText).mkString(", ")}. It keeps skewagg away from the " +
            s"whole aggregate: write /*+ ${SkewAggHints.Forbid} */.")
      }
      // (Any: Spark 4's parameters are expressions, Spark 3.5's Dataset.hint passes them as
      // they are, strings among them.)
      val columns = h.parameters.map(p => p: Any).map {
        case a: UnresolvedAttribute => a.name
        case n: NamedExpression => n.name
        case Literal(v, _) if v != null => v.toString
        case s: String => s
        case other => throw new SkewAggAnalysisException(
            s"${h.name.toUpperCase} hint parameters must be column names, got " +
              s"${parameterText(other)}. " +
              s"Write /*+ ${h.name.toUpperCase}(column, ...) */ or leave the parameters out.")
      }
      val hint = SkewAggHint(force, columns)
      val hinted = SkewAggHints.attach(h.child, hint).orElse {
        // A DataFrame's windows exist already (tagged on a clone); a SELECT's are extracted
        // later (tagged then, RestoreSkewAggHints).
        if (!SkewAggHints.windowed(h.child)) None
        else {
          val own = h.child.clone()
          SkewAggHints.tagWindows(own, hint)
          Some(own)
        }
      }.getOrElse(throw new SkewAggAnalysisException(
        s"${h.name.toUpperCase} hint must be placed on an aggregate with grouping keys (GROUP " +
          "BY, or the DataFrame returned by groupBy(...).agg(...)) or on window functions, but " +
          s"there is neither below it in: ${h.child.simpleString(200)}. (In SQL, an aggregate " +
          "without GROUP BY has one group and nothing to spread: leave the hint out.)"))
      hinted.setTagValue(SkewAggHints.Tag, hint)
      hinted
  }

  private def parameterText(parameter: Any): String = parameter match {
    case a: UnresolvedAttribute => a.name
    case e: Expression => e.sql
    case other => String.valueOf(other)
  }

  private def isSkewAggHint(name: String): Boolean =
    name.equalsIgnoreCase(SkewAggHints.Force) || name.equalsIgnoreCase(SkewAggHints.Forbid)

}
