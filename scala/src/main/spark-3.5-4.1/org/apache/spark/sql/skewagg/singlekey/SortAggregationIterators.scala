package org.apache.spark.sql.skewagg.singlekey

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute, Expression, MutableProjection, NamedExpression
}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.execution.aggregate.SortBasedAggregationIterator
import org.apache.spark.sql.execution.metric.SQLMetric

/** Spark's sort-based aggregation iterator, Spark 4.0 and 4.1. */
object SortAggregationIterators {
  def create(
      partIndex: Int,
      groupingExpressions: Seq[NamedExpression],
      valueAttributes: Seq[Attribute],
      input: Iterator[InternalRow],
      aggregateExpressions: Seq[AggregateExpression],
      aggregateAttributes: Seq[Attribute],
      initialInputBufferOffset: Int,
      resultExpressions: Seq[NamedExpression],
      numOutputRows: SQLMetric): SortBasedAggregationIterator =
    new SortBasedAggregationIterator(
      partIndex,
      groupingExpressions,
      valueAttributes,
      input,
      aggregateExpressions,
      aggregateAttributes,
      initialInputBufferOffset,
      resultExpressions,
      (expressions: Seq[Expression], schema: Seq[Attribute]) =>
        MutableProjection.create(expressions, schema),
      numOutputRows)
}
