package org.apache.spark.sql.skewagg.explain

import org.apache.spark.sql.catalyst.expressions.NamedExpression
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.python.AggregateInPandasExec

/** Spark's physical aggregate of Python UDAFs (pandas_udf), Spark 4.0: AggregateInPandasExec. */
object PythonAggregates {

  /** Its grouping and aggregate expressions. */
  def unapply(plan: SparkPlan): Option[(Seq[NamedExpression], Seq[AggregateExpression])] =
    plan match {
      case p: AggregateInPandasExec => Some((p.groupingExpressions, p.aggExpressions))
      case _ => None
    }
}
