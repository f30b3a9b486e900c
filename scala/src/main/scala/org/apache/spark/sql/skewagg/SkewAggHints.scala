package org.apache.spark.sql.skewagg

import org.apache.spark.sql.{AnalysisException, SparkSession}
import org.apache.spark.sql.catalyst.expressions.{
  Expression, Literal, NamedExpression, UnresolvedWindowExpression, WindowExpression
}
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.execution.SparkPlan

/**
 * `/*+ SKEW_AGG */` (or `SKEW_AGG(col, ...)` naming the skewed columns) forces skewagg's
 * local-global plans for an aggregate, skew evidence or not; `/*+ NO_SKEW_AGG */` keeps skewagg
 * away from it. In DataFrames: `df.groupBy(...).agg(...).hint("skew_agg")`. Resolved onto the
 * aggregate itself ([[AggregateHintCarrier]]: `Aggregate.hint` on Spark 4.0+), which the rules
 * read. On a SELECT with window functions and no aggregate below, the hint goes to its windows (a
 * tag on each logical `Window`, [[SkewAggHints.WindowTag]]): SKEW_AGG looks for hot keys in every
 * partition of a window's shuffle, NO_SKEW_AGG leaves the windows to Spark.
 */
case class SkewAggHint(force: Boolean, columns: Seq[String])
    extends AggregateHintCarrier.Carried {
  def name: String = if (force) SkewAggHints.Force else SkewAggHints.Forbid
}

class SkewAggAnalysisException(message: String) extends AnalysisException(message)

object SkewAggHints {
  val Force = "SKEW_AGG"
  val Forbid = "NO_SKEW_AGG"

  def of(agg: Aggregate): Option[SkewAggHint] = AggregateHintCarrier.get(agg)

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

  /** The hint on the windows of a hinted SELECT without an aggregate below it. */
  val WindowTag: TreeNodeTag[SkewAggHint] = TreeNodeTag[SkewAggHint]("skewagg.windowHint")

  /** The hint of the logical window a physical window was planned from. */
  def ofWindow(plan: SparkPlan): Option[SkewAggHint] =
    plan.logicalLink.flatMap(_.getTagValue(WindowTag))

  /**
   * Whether `plan` holds window functions through unary nodes, above any view: a `Window`, or
   * (in SQL, before the windows are extracted) a node with window expressions.
   */
  def windowed(plan: LogicalPlan): Boolean = plan match {
    case _: View => false
    case _: Window => true
    case p if p.expressions.exists(_.exists {
          case _: WindowExpression | _: UnresolvedWindowExpression => true
          case _ => false
        }) =>
      true
    case u: UnaryNode => windowed(u.child)
    case _ => false
  }

  /**
   * Tags with `hint` the windows below `plan` through unary nodes, down to an aggregate or a view.
   * In place, so only on nodes of the hinted query alone: a view's plan is shared by the queries
   * that read it, and a DataFrame's with the DataFrames built on it ([[ResolveSkewAggHints]]
   * tags a clone); analysis keeps a node a rule returns equal to it (a copy with a tag is equal),
   * so a SELECT's windows are tagged where analysis extracted them.
   */
  def tagWindows(plan: LogicalPlan, hint: SkewAggHint): Unit = plan match {
    case _: Aggregate | _: View =>
    case w: Window => w.setTagValue(WindowTag, hint); tagWindows(w.child, hint)
    case u: UnaryNode => tagWindows(u.child, hint)
    case _ =>
  }

  /** `plan` with `hint` on the first aggregate below it through unary nodes, if there is one. */
  def attach(plan: LogicalPlan, hint: SkewAggHint): Option[LogicalPlan] = plan match {
    case a: Aggregate if of(a).contains(hint) => Some(a)
    case a: Aggregate => Some(AggregateHintCarrier.put(a, hint))
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
  override def apply(plan: LogicalPlan): LogicalPlan = {
    val restored = plan.resolveOperatorsDown {
      case p if p.getTagValue(SkewAggHints.Tag).isDefined =>
        val hint = p.getTagValue(SkewAggHints.Tag).get
        SkewAggHints.attach(p, hint).getOrElse {
          SkewAggHints.tagWindows(p, hint) // (a SELECT's windows: extracted by now)
          p
        }
    }
    AggregateHintCarrier.analyzed(restored)
    restored
  }
}

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

/**
 * Analysis check: each column named by a skewagg hint is a column of the aggregate's input.
 * Qualified names (`f.k`) are resolved as in SQL. A name that matches several input columns (`k`
 * of both sides of a join) is accepted: the columns only say which columns are skewed, and every
 * match is one.
 */
case class CheckSkewAggHints(session: SparkSession) extends (LogicalPlan => Unit) {
  override def apply(plan: LogicalPlan): Unit = plan.foreach {
    case a: Aggregate => SkewAggHints.of(a).foreach(check(_, a.child, "aggregate"))
    case w: Window => w.getTagValue(SkewAggHints.WindowTag).foreach(check(_, w.child, "window"))
    case _ =>
  }

  private def check(hint: SkewAggHint, input: LogicalPlan, what: String): Unit = {
    val resolver = session.sessionState.conf.resolver
    hint.columns.foreach { column =>
      val nameParts = UnresolvedAttribute.parseAttributeName(column)
      val exists =
        try input.resolve(nameParts, resolver).isDefined
        catch {
          case _: AnalysisException => true // ambiguous: more than one column has that name
        }
      if (!exists) {
        val available = input.output.map(c => (c.qualifier :+ c.name).mkString("."))
        throw new SkewAggAnalysisException(
          s"${hint.name} hint names column `$column`, which is not a column of the " +
            s"$what's input. Available columns: ${available.mkString(", ")}.")
      }
    }
  }
}
