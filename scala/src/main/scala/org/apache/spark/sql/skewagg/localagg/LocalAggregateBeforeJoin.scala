package org.apache.spark.sql.skewagg.localagg

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{
  Alias, Attribute, AttributeSet, ExpressionSet, NamedExpression
}
import org.apache.spark.sql.catalyst.expressions.PythonUDAF
import org.apache.spark.sql.catalyst.planning.{ExtractEquiJoinKeys, PhysicalAggregation}
import org.apache.spark.sql.catalyst.plans.{
  Inner, JoinType, LeftAnti, LeftOuter, LeftSemi, RightOuter
}
import org.apache.spark.sql.catalyst.expressions.aggregate.{
  AggregateExpression, TypedImperativeAggregate
}
import org.apache.spark.sql.catalyst.plans.logical.{
  Aggregate, BROADCAST, Filter, Join, LogicalPlan, Project
}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.execution.{PlanLater, SparkPlan, SparkStrategy}
import org.apache.spark.sql.execution.adaptive.{
  BroadcastQueryStageExec, LogicalQueryStage, ShuffleQueryStageExec
}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{SessionStates, SkewAggConf, RecordedDecisions, SkewAggHints}
import org.apache.spark.sql.skewagg.ansi.WrappingLongSum
import org.apache.spark.sql.skewagg.localagg.LocalAggregateBeforeJoin.Rewrite
import org.apache.spark.sql.skewagg.SkewAggDecision.{Refused, SwitchedOff}
import org.apache.spark.sql.types.{Decimal, DecimalType}
import org.apache.spark.util.Utils

/**
 * Planner strategy: rewrites the optimized plan while it is planned, after every optimizer batch,
 * so no optimizer rule ever reads the partial and final halves it builds (see
 * docs/architecture.md: rules such as DecimalAggregates and FoldablePropagation rewrite the
 * expressions of every node they meet, and broke the halves when this was an optimizer rule).
 *
 * Matches: `Aggregate(keys, aggs)` over an equi-join (directly or through a column-pruning
 * Project) when every aggregate function reads only one side's columns (the aggregated side, S)
 * and no row of the other side can reach the aggregate without a match: inner joins; left outer,
 * left semi and left anti joins aggregating the left side; right outer joins aggregating the
 * right side.
 *
 * Produces: Spark's final aggregate of `(keys, aggs)` ([[FinalAggregates]]) over the join, planned
 * by Spark, of `PartialAggregate(S-keys, aggs, S)` with the other side, where S-keys are S's
 * grouping columns and the columns the join condition reads from it. A hot key's rows collapse
 * before the join's shuffle. Exact for every partially aggregatable function: a partial buffer
 * joined to m rows is merged m times, which is what aggregating each of its rows m times gives.
 * Before a join that may drop rows (all but outer joins), an ANSI `sum` of integers is a
 * [[WrappingLongSum]]: a group the join drops must not fail the query on overflow.
 * When every aggregate is DISTINCT, S's rows are deduplicated on S-keys and the DISTINCT columns
 * instead, and the aggregate stays as it is: DISTINCT ignores how often a row repeats.
 *
 * Before a join Spark will shuffle, the partial rows are also merged right after that shuffle
 * (a PartialMerge aggregate clustered on the side's join keys, when they are columns, and not
 * for DISTINCT-only aggregates, whose rows Spark deduplicates again above the join): the join
 * then sorts and matches one row per group, and the final aggregate above only merges the
 * buffers the join repeats (measured: see docs/benchmarks.md, join scenario).
 *
 * With the SKEW_AGG hint the partial aggregate is Spark's (every row aggregated). Without it, the
 * partial aggregate is a [[FlushingPartialAggregateExec]] that aggregates only while its own
 * counts show that it reduces rows, and only before a join Spark will shuffle (both sides above
 * the broadcast threshold, no broadcast hint, neither side a broadcast stage of adaptive
 * execution; recorded: see `refusedAsBroadcast`): before a selective or broadcast join a full
 * partial aggregate can cost more than it saves.
 *
 * Refuses when skewagg or `spark.skewagg.join.localAggregate.enabled` is off, the aggregate has
 * the NO_SKEW_AGG hint, mixes DISTINCT and other aggregates, has FILTER clauses on DISTINCT,
 * nondeterministic or Python aggregates, groups by computed expressions other than constants,
 * the Project in between computes columns, the join type and aggregated side do not match as
 * above, the side was already shuffled for the join when adaptive execution re-plans it (see
 * `shuffledForJoinAlready`), an aggregate may fail on some row before a join that may drop rows
 * (recorded: see `refusedAsFailing`), or (without the hint) it has holistic aggregates (their
 * partial buffers are as large as their input), partial buffers with decimals of more than 18
 * digits (recorded: see `refusedForWideDecimals`) or Spark knows the aggregated side to be
 * (nearly) unique on its
 * keys or, without column statistics of its keys, it reads at most half the bytes of tables
 * the other side reads (recorded: see `refusedAsUnique`). DISTINCTs of several column sets reach
 * it already expanded by Spark's RewriteDistinctAggregates (an aggregate over an Expand, not over
 * the join): left alone.
 */
case class LocalAggregateBeforeJoin(session: SparkSession) extends SparkStrategy {

  private def conf: SQLConf = SQLConf.get

  override def apply(plan: LogicalPlan): Seq[SparkPlan] = plan match {
    case agg: Aggregate
        if SkewAggConf.enabled(conf) && !agg.isStreaming &&
          !SkewAggHints.forbidden(agg) =>
      if (conf.getConf(SkewAggConf.JOIN_LOCAL_AGGREGATE_ENABLED)) {
        rewrite(agg, forced = SkewAggHints.forced(agg)).toSeq
      } else {
        if (wouldConsider(agg)) {
          RecordedDecisions.record(
            agg,
            SwitchedOff(
              "no local aggregation before the join",
              SkewAggConf.JOIN_LOCAL_AGGREGATE_ENABLED))
        }
        Nil
      }
    case _ => Nil
  }

  /** Whether `agg` has the shape the rewrite looks at: functions reading one side of a join. */
  private def wouldConsider(agg: Aggregate): Boolean = agg match {
    case PhysicalAggregation(grouping, aggregates, _, _)
        if grouping.nonEmpty && aggregates.nonEmpty =>
      joinBelow(agg.child).exists { case (join, _) =>
        aggregatedSide(join, AttributeSet(aggregates.flatMap(_.references))).isDefined
      }
    case _ => false
  }

  private def rewrite(agg: Aggregate, forced: Boolean): Option[SparkPlan] = agg match {
    case PhysicalAggregation(grouping, aggregates, result, _)
        if grouping.nonEmpty && grouping.forall(columnOrConstant) &&
          aggregates.nonEmpty && aggregates.forall(_.deterministic) &&
          !aggregates.exists(_.aggregateFunction.isInstanceOf[PythonUDAF]) &&
          (forced || !aggregates.exists(
            _.aggregateFunction.isInstanceOf[TypedImperativeAggregate[_]])) &&
          (aggregates.forall(a => a.isDistinct && a.filter.isEmpty) || !aggregates.exists(
            _.isDistinct)) =>
      val distinctOnly = aggregates.forall(_.isDistinct)
      for {
        (join, projected) <- joinBelow(agg.child)
        side <- aggregatedSide(join, AttributeSet(aggregates.flatMap(_.references)))
        if forced || !refusedAsBroadcast(agg, join)
        if forced || shuffled(join)
        if forced || distinctOnly || !refusedForWideDecimals(agg, aggregates)
        drops = join.joinType match {
          case LeftOuter | RightOuter => false
          case _ => true
        }
        aggs = if (drops) aggregates.map(WrappingLongSum.in) else aggregates
        if distinctOnly || !drops || !refusedAsFailing(agg, aggs, forced)
        s = if (side == "left") join.left else join.right
        if !shuffledForJoinAlready(s, joinKeysOf(join, side))
        conditionRefs = join.condition.map(_.references).getOrElse(AttributeSet.empty)
        keys =
          (grouping.map(_.toAttribute) ++ conditionRefs.toSeq).filter(s.outputSet.contains).distinct
        if forced || !refusedAsUnique(agg, s, if (side == "left") join.right else join.left, keys)
        local <- localSide(
          agg,
          aggs,
          keys,
          projected,
          s,
          flushing = !forced,
          shuffleKeys = if (shuffled(join)) joinKeysOf(join, side) else Nil)
        newJoin = if (side == "left") join.copy(left = local) else join.copy(right = local)
        planned <- plan(agg, newJoin, local, distinctOnly, grouping, aggs, result)
      } yield planned
    case _ => None
  }

  /**
   * `agg` planned over `newJoin` (the join with `local` as one side): for DISTINCT-only
   * aggregates Spark's own aggregate plan, else Spark's final aggregate of the partial buffers.
   * The join is planned here, and every physical node planned from `newJoin` or `local` links to
   * `agg` as its logical plan, as the nodes of Spark's own multi-phase aggregates do: adaptive
   * execution's logical plan (the optimized plan, which holds `agg`, not `newJoin`) then finds the
   * query stages below the rewrite, and re-plans `agg` from them. That re-plans the join as part
   * of one stage, never as a broadcast join, so the join is tagged for
   * [[BroadcastJoinBelowLocalAggregate]] unless a join strategy hint chose it.
   */
  private def plan(
      agg: Aggregate,
      newJoin: LogicalPlan,
      local: LogicalPlan,
      distinctOnly: Boolean,
      grouping: Seq[NamedExpression],
      aggregates: Seq[AggregateExpression],
      result: Seq[NamedExpression]): Option[SparkPlan] = {
    val planner = SessionStates.of(session).planner
    val join = planner.plan(newJoin).next()
    val hinted = newJoin match {
      case j: Join => Seq(j.hint.leftHint, j.hint.rightHint).flatten.exists(_.strategy.isDefined)
      case _ => true
    }
    join.foreach { node =>
      if (node.logicalLink.exists(l => (l eq newJoin) || (l eq local))) {
        if (!hinted && node.logicalLink.exists(_ eq newJoin)) {
          node.setTagValue(BroadcastJoinBelowLocalAggregate.MayBroadcast, ())
        }
        node.setTagValue(SparkPlan.LOGICAL_PLAN_TAG, agg)
      }
    }
    if (distinctOnly) {
      planner.Aggregation(agg.copy(child = newJoin)).headOption.map(_.transformUp {
        case PlanLater(p) if p eq newJoin => join
      })
    } else {
      FinalAggregates.plan(grouping, aggregates, result, join)
    }
  }

  /**
   * Refuses when adaptive execution re-plans the join after the side `s` was shuffled on its
   * join keys `joinKeys` for the join (a materialized stage, under row-local nodes, hashed on
   * exactly those keys): the shuffle a local aggregate would shrink has run, and aggregating now
   * would shuffle the same rows a second time. Records nothing: the decision recorded when the
   * join was first planned (a refusal, or a planning step that fell back) stands.
   */
  private def shuffledForJoinAlready(s: LogicalPlan, joinKeys: Seq[Attribute]): Boolean =
    s match {
      case Project(_, child) => shuffledForJoinAlready(child, joinKeys)
      case Filter(_, child) => shuffledForJoinAlready(child, joinKeys)
      case LogicalQueryStage(_, stage: ShuffleQueryStageExec) =>
        stage.shuffle.outputPartitioning match {
          case HashPartitioning(expressions, _) =>
            joinKeys.nonEmpty && expressions.size == joinKeys.size &&
            expressions.forall(e => joinKeys.exists(_.semanticEquals(e)))
          case _ => false
        }
      case _ => false
    }

  /**
   * Without the hint, refuses (recording why on `agg`) when Spark knows that `s` holds (nearly)
   * one row per `keys`, so a local aggregate would merge nothing: `s` is itself grouped or
   * deduplicated on some of them (its distinct keys), or column statistics (`ANALYZE TABLE ...
   * FOR COLUMNS`, read with `spark.sql.cbo.enabled`) give one key column at least one distinct
   * value per `spark.skewagg.localAggregate.minMergeReduction` rows. Without column statistics
   * of the keys, it also refuses when `s` reads at most half the bytes of tables `other` reads:
   * taken for the "one" side of a one-to-many join (a dimension joined to its facts, TPC-H's
   * orders to lineitem), unique on its join key (measured: docs/experiments.md). Otherwise the
   * rewrite goes ahead, and adaptive execution judges the keys from what the local aggregate
   * emitted ([[DropUnneededMergeAfterShuffle]]).
   */
  private def refusedAsUnique(
      agg: Aggregate,
      side: LogicalPlan,
      other: LogicalPlan,
      keys: Seq[Attribute]): Boolean = {
    // Re-planned by adaptive execution, parts of the side are stages that ran: their logical
    // plans keep the distinct keys and column statistics that the stages do not report.
    def planned(p: LogicalPlan) = p.transformUp { case stage: LogicalQueryStage =>
      stage.logicalPlan
    }
    val s = planned(side)
    val keySet = ExpressionSet(keys)
    val fromPlan = s.distinctKeys.find(_.subsetOf(keySet)).map { unique =>
      s"the joined side is already unique on ${unique.map(_.sql).mkString(", ")} " +
        "(it is grouped or deduplicated on them), so aggregating it before the join would " +
        "merge nothing."
    }
    lazy val stats = s.stats
    lazy val keyDistinctCounts =
      keys.flatMap(k => stats.attributeStats.get(k).flatMap(_.distinctCount).map(k -> _))
    lazy val fromStatistics = {
      val minReduction = conf.getConf(SkewAggConf.LOCAL_AGGREGATE_MIN_MERGE_REDUCTION)
      stats.rowCount.filter(_ > 0).flatMap { rows =>
        keyDistinctCounts
          .find { case (_, distinct) => BigDecimal(distinct) * minReduction >= BigDecimal(rows) }
          .map { case (k, distinct) =>
            f"column statistics give ${k.name} $distinct%,d distinct values in " +
              f"$rows%,d rows of the joined side, fewer than " +
              s"${SkewAggConf.LOCAL_AGGREGATE_MIN_MERGE_REDUCTION.key}=$minReduction rows per " +
              "key, so aggregating it before the join would merge almost nothing."
          }
      }
    }
    // Spark's estimate of a join (without CBO) is the product of its sides' and of a Filter its
    // child's: the bytes of the tables each side reads compare the sides where those do not.
    def tableBytes(p: LogicalPlan): BigInt = p.collectLeaves().map(_.stats.sizeInBytes).sum
    lazy val fromSizes = {
      val (size, otherSize) = (tableBytes(s), tableBytes(planned(other)))
      val known = otherSize < conf.defaultSizeInBytes
      if (keyDistinctCounts.nonEmpty || !known || size * 2 > otherSize) None
      else {
        Some(
          s"the joined side reads ${Utils.bytesToString(size)} of tables, at most half the other " +
            s"side's ${Utils.bytesToString(otherSize)}: taken for the one side of a one-to-many " +
            "join, unique on its join key, where aggregating it before the join merges nothing " +
            "(column statistics of its keys that show them repeated, or the SKEW_AGG hint, make " +
            "the rewrite go ahead).")
      }
    }
    fromPlan.orElse(fromStatistics).orElse(fromSizes) match {
      case Some(reason) => RecordedDecisions.record(agg, Refused(reason, Rewrite)); true
      case None => false
    }
  }

  /**
   * Without the hint, refuses (recording why on `agg`) when a partial buffer holds a decimal of
   * more than 18 digits (`sum` of a decimal(12, 2) column keeps one of 22). A row stores such a
   * decimal as bytes: a BigDecimal to write it and one to read it back, per row. Every row the
   * flushing aggregate passes through then costs more than the join saves, and only a hot key's
   * rows would pay; adaptive execution still splits a skewed join partition below the aggregate
   * at run time (measured: docs/experiments.md).
   */
  private def refusedForWideDecimals(
      agg: Aggregate,
      aggregates: Seq[AggregateExpression]): Boolean = {
    val wide = aggregates.filter(_.aggregateFunction.aggBufferAttributes.exists(_.dataType match {
      case d: DecimalType => d.precision > Decimal.MAX_LONG_DIGITS
      case _ => false
    }))
    if (wide.nonEmpty) {
      RecordedDecisions.record(
        agg,
        Refused(
          s"the partial buffers of ${wide.map(_.sql).mkString(", ")} hold decimals of more " +
            s"than ${Decimal.MAX_LONG_DIGITS} digits, which cost a BigDecimal per row passed on " +
            "before the join, more than aggregating before it saves unless keys repeat within a " +
            "task (the SKEW_AGG hint aggregates anyway).",
          Rewrite))
    }
    wide.nonEmpty
  }

  /**
   * Refuses (recording why on `agg`) when an aggregate may fail on some row ([[RowFailures]]),
   * before a join that may drop rows: aggregating rows the join drops could fail a query Spark
   * answers. With the hint, the user's own functions are trusted.
   */
  private def refusedAsFailing(
      agg: Aggregate,
      aggregates: Seq[AggregateExpression],
      forced: Boolean): Boolean = {
    val failing = aggregates.flatMap(RowFailures.of(_, trustUserCode = forced))
    if (failing.nonEmpty) {
      RecordedDecisions.record(
        agg,
        Refused(
          s"${failing.mkString(", ")} may fail on some " +
            "rows, and aggregating before the join would also evaluate it on rows the join drops.",
          Rewrite))
    }
    failing.nonEmpty
  }

  /**
   * A grouping key the rewrite takes: a column, or a constant (a literal key that Spark's
   * optimizer kept, such as a foldable column of a CTE or of a decorrelated subquery), which the
   * final aggregate computes and the partial one does not need.
   */
  private def columnOrConstant(key: NamedExpression): Boolean = key match {
    case _: Attribute => true
    case Alias(child, _) => child.foldable
    case _ => false
  }

  /**
   * `s` aggregated partially on `keys`; for DISTINCT-only aggregates, `s` deduplicated on `keys`
   * and the DISTINCT columns, if every column of `s` read above the join survives that.
   */
  private def localSide(
      agg: Aggregate,
      aggregates: Seq[AggregateExpression],
      keys: Seq[Attribute],
      projected: AttributeSet,
      s: LogicalPlan,
      flushing: Boolean,
      shuffleKeys: Seq[Attribute]): Option[LogicalPlan] = {
    if (aggregates.forall(_.isDistinct)) {
      val kept = (keys ++ aggregates.flatMap(_.references).filter(s.outputSet.contains)).distinct
      val readAbove = (agg.references ++ projected) intersect s.outputSet
      if (readAbove.subsetOf(AttributeSet(kept))) {
        Some(PartialAggregate(kept, Nil, s, flushing, shuffleKeys))
      } else None
    } else {
      Some(PartialAggregate(keys, aggregates, s, flushing, shuffleKeys))
    }
  }

  /** The join under `plan`, and the columns a Project in between reads. */
  private def joinBelow(plan: LogicalPlan): Option[(Join, AttributeSet)] = plan match {
    case j: Join => Some((j, AttributeSet.empty))
    case p: Project if p.projectList.forall(_.isInstanceOf[Attribute]) =>
      joinBelow(p.child).map { case (j, refs) => (j, refs ++ p.references) }
    case _ => None
  }

  /**
   * The equi-join keys of `side`, when they are all columns: the local aggregate judges heavy
   * keys by them, and its rows are merged after the join's own shuffle on them. Nil (neither)
   * for computed keys, whose shuffle the merge could not share.
   */
  private def joinKeysOf(join: Join, side: String): Seq[Attribute] = join match {
    case ExtractEquiJoinKeys(_, leftKeys, rightKeys, _, _, _, _, _) =>
      val keys = if (side == "left") leftKeys else rightKeys
      if (keys.forall(_.isInstanceOf[Attribute])) keys.map(_.asInstanceOf[Attribute]) else Nil
    case _ => Nil
  }

  /** Spark will shuffle both sides: an equi-join, neither side broadcast ([[broadcastBy]]). */
  private def shuffled(join: Join): Boolean = join.condition.isDefined && broadcastBy(join).isEmpty

  /**
   * Why Spark broadcasts a side of equi-join `join`, if it does: a side adaptive execution has
   * broadcast already (a broadcast stage under row-local nodes, which the join it re-plans keeps
   * broadcasting; its size is no guide: a broadcast stage reports its hashed relation's memory,
   * a whole page, 64 MiB by default, for one row), a broadcast hint, or a side's estimate at most
   * `spark.sql.autoBroadcastJoinThreshold`.
   */
  private def broadcastBy(join: Join): Option[String] = {
    def stageRows(p: LogicalPlan): Option[Option[BigInt]] = p match {
      case Project(_, child) => stageRows(child)
      case Filter(_, child) => stageRows(child)
      case stage @ LogicalQueryStage(_, _: BroadcastQueryStageExec) => Some(stage.stats.rowCount)
      case _ => None
    }
    val threshold = conf.autoBroadcastJoinThreshold
    lazy val smallest = join.left.stats.sizeInBytes.min(join.right.stats.sizeInBytes)
    stageRows(join.left).orElse(stageRows(join.right)).map { rows =>
      "adaptive execution broadcasts a side of the join (a broadcast stage" +
        rows.fold("")(r => f" of $r%,d rows") + ")"
    }.orElse {
      val hints = Seq(join.hint.leftHint, join.hint.rightHint).flatten
      if (hints.exists(_.strategy.contains(BROADCAST))) Some("a hint broadcasts a side of the join")
      else None
    }.orElse {
      if (threshold < 0 || smallest > threshold) None
      else {
        val (size, limit) = (Utils.bytesToString(smallest), Utils.bytesToString(threshold))
        Some(s"Spark broadcasts a side of the join (estimated at $size, at most " +
          s"${SQLConf.AUTO_BROADCASTJOIN_THRESHOLD.key}=$limit)")
      }
    }
  }

  /**
   * Without the hint, refuses (recording why on `agg`) an equi-join Spark broadcasts a side of
   * ([[broadcastBy]]): the aggregated side is not shuffled for it, so a local aggregate would
   * only add work, and a shuffle of its own.
   */
  private def refusedAsBroadcast(agg: Aggregate, join: Join): Boolean =
    join.condition.isDefined && broadcastBy(join).exists { why =>
      RecordedDecisions.record(
        agg,
        Refused(
          s"$why, so the aggregated side is not shuffled for it: a local aggregate before the " +
            "join would only add work.",
          Rewrite))
      true
    }

  /** "left" or "right": the side whose rows the aggregate functions read, when that is exact. */
  private def aggregatedSide(join: Join, aggregateRefs: AttributeSet): Option[String] = {
    val readsOnlyLeft = aggregateRefs.subsetOf(join.left.outputSet)
    val readsOnlyRight = aggregateRefs.subsetOf(join.right.outputSet)
    val leftOk = readsOnlyLeft && leftMayAggregate(join.joinType)
    val rightOk = readsOnlyRight && rightMayAggregate(join.joinType)
    if (leftOk && rightOk) {
      // count(*)-style aggregates read neither side: aggregate the larger one.
      Some(if (join.left.stats.sizeInBytes >= join.right.stats.sizeInBytes) "left" else "right")
    } else if (leftOk) Some("left") else if (rightOk) Some("right") else None
  }

  private def leftMayAggregate(t: JoinType): Boolean = t match {
    case Inner | LeftOuter | LeftSemi | LeftAnti => true
    case _ => false
  }

  private def rightMayAggregate(t: JoinType): Boolean = t match {
    case Inner | RightOuter => true
    case _ => false
  }
}

object LocalAggregateBeforeJoin {

  /** The rewrite's name in its records (`SkewAggDecision.Rewritten` and `Refused`). */
  val Rewrite = "local aggregate before the join"
}
