package org.apache.spark.sql.skewagg.singlekey

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute, AttributeSet, Expression, NamedExpression
}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.util.truncatedString
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.skewagg.{SkewAggAggregateExec, SkewAggDecision, RecordedDecisions}
import org.apache.spark.sql.skewagg.hotkey.{HotKeySplitMetrics, HotKeySplitSteps}

/**
 * [[SingleKeyAggregateExec]] whose hot keys are split by value across several tasks, so that the
 * exact percentiles of one key are computed in parallel.
 *
 * Plan shape: planned by [[PlanHolisticAggregatesSortBased]] in place of SingleKeyAggregate
 * (and its hash shuffle and sort) when every holistic function is a [[SortedRunPercentile]]
 * without FILTER and every other function has a fixed-size buffer Spark can merge
 * (DeclarativeAggregate: sum, count, avg, min, max, ...). Its child is the projected input; it
 * shuffles that input itself, because where a row goes depends on a sample taken when it runs.
 *
 * Execution ([[HotKeySplitAggregateJobs]], with the hot-key steps; all decisions are
 * functions of the input, so task retries are safe):
 *  1. One job samples part of the input ([[HotKeyRanges.sample]]): hot keys and value bounds.
 *  2. One shuffle of the input: ordinary keys by hash to `spark.sql.shuffle.partitions`
 *     partitions, each hot key by value range to its own split partitions.
 *  3. Ordinary partitions: sorted by (keys, value) and aggregated one key at a time, exactly as
 *     SingleKeyAggregate does.
 *  4. Hot keys (only when there are any): a job reads every split once and returns, per
 *     percentile function, how many ranks the split holds (its non-null values, or the sum of
 *     their frequencies), and the partial buffer (Spark's Partial mode) of the other functions.
 *     The driver adds the counts up: each split's rank offset within its key, each key's total,
 *     so the ranks each percentile needs and the split holding each (the two ranks of an
 *     interpolation can lie in two adjacent splits). A second job runs only on the splits that
 *     hold a needed rank: each sorts its rows by value and returns the values at its ranks. One
 *     task then merges each hot key's pieces into its row: the percentiles with Spark's
 *     arithmetic ([[SortedRunPercentile.resultFrom]]), the other functions in Final mode.
 * Refuses nothing at run time: when the sample finds no hot key it is a SingleKeyAggregate whose
 * input was partly read twice (the sampled partitions).
 *
 * Metrics: keys processed, rows read, percentile buffer spill size, hot keys split, splits, and
 * percentiles interpolated between two splits.
 */
case class HotKeySplitAggregateExec(
    groupingAttributes: Seq[Attribute],
    aggregateExpressions: Seq[AggregateExpression],
    aggregateAttributes: Seq[Attribute],
    resultExpressions: Seq[NamedExpression],
    sortValue: Expression,
    child: SparkPlan)
    extends UnaryExecNode with SkewAggAggregateExec {

  override def output: Seq[Attribute] = resultExpressions.map(_.toAttribute)
  override def producedAttributes: AttributeSet = AttributeSet(aggregateAttributes)

  /** The metrics of the hot-key split, which its run sets. */
  private lazy val hotKeySplitMetrics = HotKeySplitMetrics(sparkContext)

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "keys processed"),
    "numInputRows" -> SQLMetrics.createMetric(sparkContext, "rows read"),
    "spillSize" -> SQLMetrics.createSizeMetric(sparkContext, "key buffer spill size"),
    "sortSpillSize" -> SQLMetrics.createSizeMetric(sparkContext, "sort spill size"),
    "splitInterpolations" -> SQLMetrics.createMetric(
      sparkContext,
      "percentiles interpolated between two splits")) ++ hotKeySplitMetrics.byName

  override def nodeName: String = "HotKeySplitAggregate"

  override def decision: String =
    SingleKeyAggregateExec.describe(
      nodeName,
      longMetric("numInputRows"),
      longMetric("numOutputRows")) +
      RecordedDecisions.atRunTime(this).map("; " + _.what).mkString

  override def simpleString(maxFields: Int): String = {
    val keys = truncatedString(groupingAttributes, "[", ", ", "]", maxFields)
    val functions = truncatedString(aggregateExpressions, "[", ", ", "]", maxFields)
    s"$nodeName(key=$keys, functions=$functions, sortedBy=${sortValue.sql}, " +
      "hotKeys=splitByValue)"
  }

  override protected def doExecute(): RDD[InternalRow] = {
    val steps = new HotKeySplitSteps(sparkContext, hotKeySplitMetrics)
    new HotKeySplitAggregateJobs(this, steps).execute()
  }

  override protected def withNewChildInternal(newChild: SparkPlan): HotKeySplitAggregateExec =
    copy(child = newChild)
}

object HotKeySplitAggregateExec {

  /**
   * The step its run decides ([[SkewAggDecision.AtRunTime]]): which hot keys it split, with the
   * sample's numbers.
   */
  val Step = "hot-key split"
}
