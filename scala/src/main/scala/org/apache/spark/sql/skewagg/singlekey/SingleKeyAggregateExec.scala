package org.apache.spark.sql.skewagg.singlekey

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Ascending, Attribute, Expression, NamedExpression, SortOrder
}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.plans.physical.{ClusteredDistribution, Distribution}
import org.apache.spark.sql.catalyst.util.truncatedString
import org.apache.spark.sql.execution.{PartitioningPreservingUnaryExecNode, SparkPlan}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.skewagg.SkewAggAggregateExec

/**
 * Aggregation of bounded input one grouping key at a time. Its child's rows are clustered by the
 * grouping attributes (one hash shuffle of the raw rows) and sorted by them, then by `sortValue`
 * when there is one (Spark's SortExec: external, spilling, binary rows). Spark's sort-based
 * aggregation iterator walks the sorted rows and holds the aggregation buffer of the current key
 * only, emitting the key's row when the key changes; every function runs in Complete mode. The
 * holistic functions are [[SortedRunPercentile]] / [[SortedRunMode]], which read the key's values
 * in `sortValue` order instead of building a value->count map; ordinary functions use Spark's own
 * code.
 *
 * Metrics: keys processed, rows read, and the bytes the percentile run buffers spilled.
 * Planned by [[PlanHolisticAggregatesSortBased]].
 */
case class SingleKeyAggregateExec(
    groupingAttributes: Seq[Attribute],
    aggregateExpressions: Seq[AggregateExpression],
    aggregateAttributes: Seq[Attribute],
    resultExpressions: Seq[NamedExpression],
    sortValue: Option[Expression],
    child: SparkPlan)
    extends PartitioningPreservingUnaryExecNode with SkewAggAggregateExec {

  override def output: Seq[Attribute] = resultExpressions.map(_.toAttribute)
  override protected def outputExpressions: Seq[NamedExpression] = resultExpressions
  override def producedAttributes =
    org.apache.spark.sql.catalyst.expressions.AttributeSet(aggregateAttributes)

  override def requiredChildDistribution: Seq[Distribution] =
    ClusteredDistribution(groupingAttributes) :: Nil

  override def requiredChildOrdering: Seq[Seq[SortOrder]] =
    (groupingAttributes ++ sortValue).map(SortOrder(_, Ascending)) :: Nil

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "keys processed"),
    "numInputRows" -> SQLMetrics.createMetric(sparkContext, "rows read"),
    "spillSize" -> SQLMetrics.createSizeMetric(sparkContext, "key buffer spill size"))

  override def nodeName: String = "SingleKeyAggregate"

  override def decision: String =
    SingleKeyAggregateExec.describe(
      nodeName,
      longMetric("numInputRows"),
      longMetric("numOutputRows"))

  override def simpleString(maxFields: Int): String = {
    val keys = truncatedString(groupingAttributes, "[", ", ", "]", maxFields)
    val functions = truncatedString(aggregateExpressions, "[", ", ", "]", maxFields)
    val sorted = sortValue.map(v => s", sortedBy=${v.sql}").getOrElse("")
    s"SingleKeyAggregate(key=$keys, functions=$functions$sorted)"
  }

  override protected def doExecute(): RDD[InternalRow] = {
    val keys = longMetric("numOutputRows")
    val rowsRead = longMetric("numInputRows")
    val functions =
      SingleKeyAggregateExec.withSpillMetric(aggregateExpressions, longMetric("spillSize"))
    val inputAttributes = child.output
    child.execute().mapPartitionsWithIndexInternal { (partIndex, input) =>
      SingleKeyAggregateExec.aggregateSorted(
        partIndex,
        input.map { row => rowsRead += 1; row },
        groupingAttributes,
        inputAttributes,
        functions,
        aggregateAttributes,
        resultExpressions,
        keys)
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): SingleKeyAggregateExec =
    copy(child = newChild)
}

object SingleKeyAggregateExec {

  /** "one key at a time (SingleKeyAggregate): 1,000,000 rows read into 1,000 keys". */
  def describe(operator: String, rowsRead: SQLMetric, keys: SQLMetric): String =
    f"one key at a time ($operator): ${rowsRead.value}%,d rows read into " +
      f"${keys.value}%,d keys"

  /** `functions` with the percentile key buffers' spilled bytes added to `spillSize`. */
  def withSpillMetric(
      functions: Seq[AggregateExpression],
      spillSize: SQLMetric): Seq[AggregateExpression] = functions.map(_.transformDown {
    case p: SortedRunPercentile => p.copy(spillSize = Some(spillSize))
  }.asInstanceOf[AggregateExpression])

  /**
   * One partition's rows, sorted by the grouping keys (then the value), aggregated one key at a
   * time by Spark's sort-based aggregation iterator, every function in Complete mode: one row
   * per key, counted in `keys`.
   */
  def aggregateSorted(
      partIndex: Int,
      sorted: Iterator[InternalRow],
      groupingAttributes: Seq[Attribute],
      inputAttributes: Seq[Attribute],
      functions: Seq[AggregateExpression],
      aggregateAttributes: Seq[Attribute],
      resultExpressions: Seq[NamedExpression],
      keys: SQLMetric): Iterator[InternalRow] = {
    // The iterator's constructor reads the first row: an empty partition emits nothing.
    if (!sorted.hasNext) Iterator.empty
    else SortAggregationIterators.create(
      partIndex,
      groupingAttributes,
      inputAttributes,
      sorted,
      functions,
      aggregateAttributes,
      0,
      resultExpressions,
      keys)
  }
}
