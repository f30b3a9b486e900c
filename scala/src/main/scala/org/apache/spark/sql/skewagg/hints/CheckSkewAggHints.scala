package org.apache.spark.sql.skewagg.hints

import org.apache.spark.sql.{AnalysisException, SparkSession}
import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.skewagg.{
  AggregateHintCarrier, SkewAggAnalysisException, SkewAggHint, SkewAggHints
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
