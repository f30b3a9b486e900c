package org.apache.spark.sql.skewagg

import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.catalyst.expressions.{UnresolvedWindowExpression, WindowExpression}
import org.apache.spark.sql.catalyst.plans.logical._
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
