package org.apache.spark.sql.skewagg

import org.apache.spark.sql.{AnalysisException, SparkSession}
import org.apache.spark.sql.catalyst.expressions.{Expression, Literal, NamedExpression}
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.execution.SparkPlan

/**
 * `/*+ SKEW_AGG */` (or `SKEW_AGG(col, ...)` naming the skewed columns) forces skewagg's
 * local-global plans for an aggregate, skew evidence or not; `/*+ NO_SKEW_AGG */` keeps skewagg
 * away from it. In DataFrames: `df.groupBy(...).agg(...).hint("skew_agg")`. Resolved onto the
 * aggregate itself (`Aggregate.hint`), which the rules read.
 */
case class SkewAggHint(force: Boolean, columns: Seq[String]) extends AggregateHint {
  def name: String = if (force) SkewAggHints.Force else SkewAggHints.Forbid
}

class SkewAggAnalysisException(message: String) extends AnalysisException(message)

object SkewAggHints {
  val Force = "SKEW_AGG"
  val Forbid = "NO_SKEW_AGG"

  def of(agg: Aggregate): Option[SkewAggHint] = agg.hint.collect { case h: SkewAggHint => h }

  def forced(agg: Aggregate): Boolean = of(agg).exists(_.force)
  def forbidden(agg: Aggregate): Boolean = of(agg).exists(!_.force)

  /** The hint of the logical aggregate a physical operator was planned from. */
  def of(plan: SparkPlan): Option[SkewAggHint] = plan.logicalLink.flatMap {
    case a: Aggregate => of(a)
    case _ => None
  }

  def forbidden(plan: SparkPlan): Boolean = of(plan).exists(!_.force)
  def forced(plan: SparkPlan): Boolean = of(plan).exists(_.force)

  /**
   * The hint also rides, as a tag, on the node where it was written (the one that replaced the
   * hint): Spark's analysis rebuilds a SQL aggregate without its `hint` field (ResolveAliases,
   * HAVING resolution), but carries tags over to the nodes that replace the one it matched.
   * [[RestoreSkewAggHints]] puts the hint back on the aggregate below that node.
   */
  val Tag: TreeNodeTag[SkewAggHint] = TreeNodeTag[SkewAggHint]("skewagg.hint")

  /** `plan` with `hint` on the first aggregate below it through unary nodes, if there is one. */
  def attach(plan: LogicalPlan, hint: SkewAggHint): Option[LogicalPlan] = plan match {
    case a: Aggregate if of(a).contains(hint) => Some(a)
    case a: Aggregate => Some(a.copy(hint = Some(hint)))
    case u: UnaryNode => attach(u.child, hint).map(c => u.withNewChildren(Seq(c)))
    case _ => None
  }
}

/**
 * Post-hoc resolution: the SKEW_AGG / NO_SKEW_AGG hint back on an aggregate that analysis
 * rebuilt without it (SQL aggregates, whose aliases and HAVING clauses are resolved after the
 * hint was attached).
 */
case class RestoreSkewAggHints(session: SparkSession) extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = plan.resolveOperatorsDown {
    case p if p.getTagValue(SkewAggHints.Tag).isDefined =>
      SkewAggHints.attach(p, p.getTagValue(SkewAggHints.Tag).get).getOrElse(p)
  }
}

/**
 * Hint resolution: moves a SKEW_AGG / NO_SKEW_AGG hint onto the aggregate it is written on: the
 * first aggregate below the hint through unary operators (Project, Filter, Sort, aliases, ...).
 * A hint with no aggregate below it, or whose parameters are not column names, is an analysis
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
      val columns = h.parameters.map {
        case a: UnresolvedAttribute => a.name
        case n: NamedExpression => n.name
        case Literal(v, _) if v != null => v.toString
        case other => throw new SkewAggAnalysisException(
            s"${h.name.toUpperCase} hint parameters must be column names, got ${other.sql}. " +
              s"Write /*+ ${h.name.toUpperCase}(column, ...) */ or leave the parameters out.")
      }
      val hint = SkewAggHint(force, columns)
      val hinted = SkewAggHints.attach(h.child, hint).getOrElse(throw new SkewAggAnalysisException(
        s"${h.name.toUpperCase} hint must be placed on an aggregate with grouping keys (GROUP " +
          "BY, or the DataFrame returned by groupBy(...).agg(...)), but there is no aggregate " +
          s"below it in: ${h.child.simpleString(200)}. (In SQL, an aggregate without GROUP BY " +
          "has one group and nothing to spread: leave the hint out.)"))
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

/**
 * Analysis check: each column named by a skewagg hint is a column of the aggregate's input.
 * Qualified names (`f.k`) are resolved as in SQL. A name that matches several input columns (`k`
 * of both sides of a join) is accepted: the columns only say which columns are skewed, and every
 * match is one.
 */
case class CheckSkewAggHints(session: SparkSession) extends (LogicalPlan => Unit) {
  override def apply(plan: LogicalPlan): Unit = plan.foreach {
    case a: Aggregate =>
      SkewAggHints.of(a).foreach { hint =>
        val resolver = session.sessionState.conf.resolver
        hint.columns.foreach { column =>
          val nameParts = UnresolvedAttribute.parseAttributeName(column)
          val exists =
            try a.child.resolve(nameParts, resolver).isDefined
            catch {
              case _: AnalysisException => true // ambiguous: more than one column has that name
            }
          if (!exists) {
            val available = a.child.output.map(c => (c.qualifier :+ c.name).mkString("."))
            throw new SkewAggAnalysisException(
              s"${hint.name} hint names column `$column`, which is not a column of the " +
                s"aggregate's input. Available columns: ${available.mkString(", ")}.")
          }
        }
      }
    case _ =>
  }
}
