package org.apache.spark.sql.skewagg.singlekey

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{
  Attribute, AttributeSet, Expression, Literal, NamedExpression, RowOrdering, VirtualColumn
}
import org.apache.spark.sql.catalyst.expressions.aggregate._
import org.apache.spark.sql.catalyst.planning.PhysicalAggregation
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, LogicalPlan}
import org.apache.spark.sql.execution.{ProjectExec, SparkPlan, SparkStrategy}
import org.apache.spark.sql.execution.aggregate.ScalaAggregator
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  Collations, PartialAggregates, SkewAggConf, SkewAggDecision, RecordedDecisions, SkewAggHints
}
import org.apache.spark.sql.skewagg.SkewAggDecision.{NotDone, SwitchedOff}
import org.apache.spark.sql.types._

/**
 * Physical planning of holistic aggregates on bounded input, one key at a time.
 *
 * Matches: a batch `Aggregate` with grouping keys whose functions include exact `percentile`
 * (also `median`, `percentile_cont`, which Spark replaces by it), `percentile_disc` or `mode`,
 * all of them over one value expression `v`.
 * Produces: `SingleKeyAggregate` over a projection of the input to the keys and the columns the
 * functions read; Spark then adds one hash shuffle on the keys and a sort by (keys, v). The
 * holistic functions become [[SortedRunPercentile]] / [[SortedRunMode]]; the other functions
 * (sum, count, collect_list, ..., with FILTER clauses) run unchanged in Complete mode.
 * Refuses (Spark plans it): streaming, `spark.skewagg.singleKey.enabled` or
 * `spark.skewagg.enabled` false, NO_SKEW_AGG, no grouping keys, GROUPING SETS / ROLLUP / CUBE,
 * DISTINCT, grouping keys that are collated strings, holistic functions over two different value
 * expressions, `mode` over a type whose ordering does not match the equality of Spark's map
 * (binary, collated strings, arrays, structs, maps), and functions Spark does not evaluate
 * itself (e.g. Python UDAFs).
 *
 * With `spark.skewagg.singleKey.split.enabled`, an aggregate whose holistic functions are all
 * percentiles without FILTER, the others fixed-size (sum, count, avg, ...), is planned as
 * [[HotKeySplitAggregateExec]] instead: the same, plus hot keys split by value across tasks.
 *
 * An aggregate whose only holistic functions are `collect_list` / `collect_set` keeps Spark's
 * plan unless `spark.skewagg.singleKey.collect.enabled` (then unsorted: one shuffle of raw rows,
 * the lists built per key). Measured faster (docs/single-key.md), but off by default: it changes
 * the order collect_list happens to produce, which users often rely on although Spark does not
 * promise it, and a hot key's list is built in one task.
 * Likewise an aggregate with typed Aggregators registered with `udaf` (ScalaAggregator) and no
 * other holistic function, with `spark.skewagg.singleKey.typedAggregate.enabled`: one shuffle of
 * raw rows instead of partial object buffers, which Spark's object hash aggregate sorts anyway
 * once a task has more than 128 keys; off by default since a hot key is not split.
 */
case class PlanHolisticAggregatesSortBased(session: SparkSession) extends SparkStrategy {

  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case agg: Aggregate if applies(agg) =>
      if (agg.conf.getConf(SkewAggConf.SINGLE_KEY_ENABLED)) planned(agg).toSeq
      else {
        if (agg.aggregateExpressions.exists(_.exists {
            case a: AggregateExpression => isHolistic(a.aggregateFunction)
            case _ => false
          })) {
          RecordedDecisions.record(
            agg,
            SwitchedOff("not one key at a time", SkewAggConf.SINGLE_KEY_ENABLED))
        }
        Nil
      }
    case _ => Nil
  }

  private def applies(agg: Aggregate): Boolean =
    SkewAggConf.enabled(agg.conf) && !agg.isStreaming &&
      !SkewAggHints.forbidden(agg) && agg.groupingExpressions.nonEmpty

  /** The holistic function's value expression, if `f` is one this operator computes exactly. */
  private def holisticValue(f: AggregateFunction): Option[Expression] = f match {
    case p: Percentile => Some(p.child)
    case p: PercentileDisc => Some(p.child)
    case m: Mode if modeSupported(m.child.dataType) => Some(m.child)
    case _ => None
  }

  private def isHolistic(f: AggregateFunction): Boolean = f match {
    case _: Percentile | _: PercentileDisc | _: Mode => true
    case _ => false
  }

  /** Types whose Spark ordering groups exactly the values Mode's hash map counts together. */
  private def modeSupported(dataType: DataType): Boolean = dataType match {
    case _: NumericType | BooleanType | DateType | TimestampType | TimestampNTZType => true
    case _: YearMonthIntervalType | _: DayTimeIntervalType => true
    case s: StringType => Collations.binaryStable(s)
    case _ => false
  }

  private def planned(agg: Aggregate): Option[SparkPlan] = agg match {
    case PhysicalAggregation(grouping, aggregates, results, child) =>
      val functions = aggregates.map(_.aggregateFunction)
      val holistic = functions.filter(isHolistic)
      val values = holistic.flatMap(holisticValue)
      val sortValue = values.headOption
      val refuse =
        (holistic.isEmpty && !optedIn(agg, functions, agg.conf)) ||
          values.size != holistic.size || // a holistic function it cannot compute
          sortValue.exists(v => values.exists(!_.semanticEquals(v))) ||
          aggregates.exists(_.isDistinct) ||
          // The sort evaluates the value on every row; Spark only on the rows a FILTER keeps, so
          // a value that can fail on the others (an ANSI cast, a division) would fail the query.
          (sortValue.exists(v => !v.isInstanceOf[Attribute] && !v.isInstanceOf[Literal]) &&
            aggregates.exists(a => a.filter.isDefined && isHolistic(a.aggregateFunction))) ||
          aggregates.exists(a => !a.deterministic) ||
          functions.exists {
            case _: DeclarativeAggregate | _: ImperativeAggregate => false
            case _ => true // e.g. Python UDAFs, which Spark plans with its own operators
          } ||
          grouping.exists(_.references.exists(_.name == VirtualColumn.groupingIdName)) ||
          // Keys are compared as binary rows: collated strings (equal but not byte-equal) refused.
          !grouping.forall(g =>
            RowOrdering.isOrderable(g.dataType) &&
              Collations.binaryStable(g.dataType)) ||
          !sortValue.forall(v => RowOrdering.isOrderable(v.dataType))
      if (refuse) None else Some(build(grouping, aggregates, results, sortValue, child, agg.conf))
    case _ => None
  }

  /**
   * Without exact percentiles or mode: whether the aggregate's collecting functions and typed
   * Aggregators are opted in. A collect function present needs the collect setting (the order
   * of the lists changes), and one of the two kinds must be present and opted in.
   */
  private def optedIn(agg: Aggregate, functions: Seq[AggregateFunction], conf: SQLConf): Boolean = {
    val collects = functions.exists { case _: CollectList | _: CollectSet => true; case _ => false }
    val typed = functions.exists(_.isInstanceOf[ScalaAggregator[_, _, _]])
    val collect = SkewAggConf.enabled(conf, SkewAggConf.SINGLE_KEY_COLLECT_ENABLED)
    val typedOn = SkewAggConf.enabled(conf, SkewAggConf.SINGLE_KEY_TYPED_AGGREGATE_ENABLED)
    if (collects && !collect) {
      RecordedDecisions.record(
        agg,
        SwitchedOff(
          "collect_list / collect_set not one key at a time",
          SkewAggConf.SINGLE_KEY_COLLECT_ENABLED))
    } else if (!collects && typed && !typedOn) {
      RecordedDecisions.record(
        agg,
        SwitchedOff(
          "typed Aggregators not one key at a time",
          SkewAggConf.SINGLE_KEY_TYPED_AGGREGATE_ENABLED))
    }
    (!collects || collect) && (collects || (typed && typedOn))
  }

  private def build(
      grouping: Seq[NamedExpression],
      aggregates: Seq[AggregateExpression],
      results: Seq[NamedExpression],
      sortValue: Option[Expression],
      child: LogicalPlan,
      conf: SQLConf): SparkPlan = {
    // Input reduced to the keys and the columns the functions read, shuffled once.
    val groupingAttributes = grouping.map(_.toAttribute)
    val keyColumns = AttributeSet(grouping.map(_.toAttribute))
    val read = AttributeSet(aggregates.flatMap(_.references))
    val valueColumns = child.output.filter(a => read.contains(a) && !keyColumns.contains(a))
    // Keys normalized as Spark's Aggregation strategy does: -0.0/0.0 and NaNs are one key.
    val projected =
      ProjectExec(PartialAggregates.normalizedKeys(grouping) ++ valueColumns, planLater(child))

    val inMemoryRows = conf.getConf(SkewAggConf.SINGLE_KEY_BUFFER_IN_MEMORY_ROWS)
    val spillRows = conf.getConf(SkewAggConf.SINGLE_KEY_BUFFER_SPILL_ROWS)
    val complete = aggregates.map { a =>
      val function = a.aggregateFunction match {
        case p: Percentile =>
          SortedRunPercentile(
            p.child,
            p.percentageExpression,
            p.frequencyExpression,
            PercentileKind.Continuous,
            p.reverse,
            p.dataType,
            inMemoryRows,
            spillRows)
        case p: PercentileDisc =>
          val kind =
            if (p.legacyCalculation) PercentileKind.LegacyDiscrete else PercentileKind.Discrete
          SortedRunPercentile(
            p.child,
            p.percentageExpression,
            p.frequencyExpression,
            kind,
            p.reverse,
            p.dataType,
            inMemoryRows,
            spillRows)
        case m: Mode => SortedRunMode(m.child, ModeOrders.reverseOpt(m))
        case other => other
      }
      a.copy(aggregateFunction = function, mode = Complete)
    }
    val attributes = complete.map(_.resultAttribute)
    splitRefusal(complete, child, conf) match {
      case None => HotKeySplitAggregateExec(
          groupingAttributes,
          complete,
          attributes,
          results,
          sortValue.get,
          projected)
      case Some(refusal) => RecordedDecisions.record(
          SingleKeyAggregateExec(
            groupingAttributes,
            complete,
            attributes,
            results,
            sortValue,
            projected),
          refusal)
    }
  }

  /**
   * Whether hot keys may be split by value ([[HotKeySplitAggregateExec]]): every holistic
   * function is a percentile without FILTER, and every other function has a fixed-size buffer
   * that Spark merges in Final mode (no mode, collect_list, percentile_approx, typed Aggregators),
   * and the input is deterministic: the split's jobs read the shuffled input twice (counts, then
   * values at ranks), and a map task re-run in between must write the same rows. None when
   * splittable, else why not.
   */
  private def splitRefusal(
      functions: Seq[AggregateExpression],
      child: LogicalPlan,
      conf: SQLConf): Option[SkewAggDecision] = {
    val notSplit = "hot keys not split by value"
    val unmergeable = functions.filterNot { a =>
      a.aggregateFunction match {
        case _: SortedRunPercentile => a.filter.isEmpty
        case _: DeclarativeAggregate => true
        case _ => false
      }
    }
    if (!conf.getConf(SkewAggConf.SINGLE_KEY_SPLIT_ENABLED)) {
      Some(SwitchedOff(notSplit, SkewAggConf.SINGLE_KEY_SPLIT_ENABLED))
    } else if (!functions.exists(_.aggregateFunction.isInstanceOf[SortedRunPercentile])) {
      Some(NotDone(notSplit, "only percentiles are split by value, and this aggregate has none"))
    } else if (unmergeable.nonEmpty) {
      val names = unmergeable.map { a =>
        userName(a.aggregateFunction) + (if (a.filter.isDefined) " with FILTER" else "")
      }.distinct
      Some(NotDone(notSplit, names.mkString(", ") + " need all of a key's rows in one task"))
    } else if (!child.deterministic) {
      Some(NotDone(notSplit, "the input is not deterministic, and a split reads it twice"))
    } else None
  }

  /** The name the user wrote for `f`. */
  private def userName(f: AggregateFunction): String = f match {
    case _: SortedRunMode => "mode"
    case _: SortedRunPercentile => "percentile"
    case other => other.prettyName
  }
}
