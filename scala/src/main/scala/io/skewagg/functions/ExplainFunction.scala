package io.skewagg.functions

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.{
  Expression, ExpressionInfo, FunctionTableSubqueryArgumentExpression
}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.SQLExecution
import org.apache.spark.sql.skewagg.SessionStates
import org.apache.spark.sql.skewagg.explain.{ExplainedRuns, SkewAggExplain}
import org.apache.spark.sql.types.{BooleanType, StringType, StructField, StructType}

/**
 * `skewagg_explain(TABLE(q) [, run])`: what skewagg decided for each aggregate and window of `q`,
 * one row per line of the text of `skewagg.explain`, from any client (SQL, JDBC, Spark Connect).
 *
 * Computed when the query runs: with `run` true, `q` runs first (its rows counted, not
 * returned) and the text explains that run; else the text explains the last run of the same
 * query in this session ([[ExplainedRuns]]), or, if it has not run, its plan as planned now
 * (an adaptive plan's run-time decisions say "not decided yet").
 */
object ExplainFunction {
  val name = "skewagg_explain"

  private val usage = s"$name takes the query as TABLE(...) and, optionally, run (a boolean " +
    s"literal): SELECT * FROM $name(TABLE(my_view)) or $name(TABLE(SELECT ...), true)"

  val description: (FunctionIdentifier, ExpressionInfo, Seq[Expression] => LogicalPlan) = (
    FunctionIdentifier(name),
    FunctionInfo(
      getClass.getName.stripSuffix("$"),
      name,
      "_FUNC_(TABLE(query) [, run]) - What skewagg decided for each aggregate and window of the " +
        "query, one row per line: for its last run in this session, for a run of it first " +
        "when run is true, else as planned now.",
      """
    Arguments:
      * query - the query, as TABLE(view or table name) or TABLE(SELECT ...)
      * run - whether to run the query first (default false)
  """,
      """
    Examples:
      > SELECT * FROM _FUNC_(TABLE(SELECT k, count(*) FROM t GROUP BY k), true);
  """,
      "table_funcs"),
    build)

  private def build(args: Seq[Expression]): LogicalPlan = args match {
    case Seq(query) => DriverRowsRelation(ExplainRows(queryOf(query), run = false))
    case Seq(query, run) => DriverRowsRelation(ExplainRows(queryOf(query), runOf(run)))
    case _ => throw new IllegalArgumentException(s"$usage; it was given ${args.size} arguments.")
  }

  private def queryOf(argument: Expression): LogicalPlan = argument match {
    case table: FunctionTableSubqueryArgumentExpression => table.plan
    case other => throw new IllegalArgumentException(s"$usage; its first argument is ${other.sql}.")
  }

  private def runOf(argument: Expression): Boolean = argument.dataType match {
    case BooleanType => FunctionInfo.literal(name, "run", argument).asInstanceOf[Boolean]
    case other => throw new IllegalArgumentException(s"$usage; run is of type ${other.sql}.")
  }

  private final case class ExplainRows(query: LogicalPlan, run: Boolean) extends DriverRows {
    override val schema: StructType = StructType(Seq(StructField("line", StringType, false)))
    override def describe: String = s"$name(run=$run)"

    override def rows(session: SparkSession): Seq[Row] = {
      val execution = SessionStates.of(session).executePlan(query)
      val text =
        if (run) {
          SQLExecution.withNewExecutionId(execution, Some(name))(execution.toRdd.count())
          SkewAggExplain.explain(execution.executedPlan)
        } else {
          ExplainedRuns.lastRunOf(execution)
            .getOrElse(SkewAggExplain.explain(execution.executedPlan))
        }
      text.split("\n").toSeq.map(Row(_))
    }
  }
}
