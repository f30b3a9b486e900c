package io.skewagg

import org.apache.spark.SPARK_VERSION
import io.skewagg.functions.{ExplainFunction, PlanDriverRows, SkewTestFunctions, TaskTimesFunction}
import org.apache.spark.sql.SparkSessionExtensions
import org.apache.spark.sql.skewagg._
import org.apache.spark.sql.skewagg.PlanningFallback.{
  beforeColumnarTransitions, check, logical, physical, strategy
}
import org.apache.spark.sql.skewagg.localagg.{
  BroadcastJoinBelowLocalAggregate, DropUnneededMergeAfterShuffle, LocalAggregateBeforeJoin,
  PartialAggregateBeforeRepartition, PlanPartialAggregates
}
import org.apache.spark.sql.skewagg.explain.{ExplainedRuns, LeftAloneReasons}
import org.apache.spark.sql.skewagg.hints.{
  CheckSkewAggHints, ResolveSkewAggHints, RestoreSkewAggHints
}
import org.apache.spark.sql.skewagg.monitor.TaggedTaskTimes
import org.apache.spark.sql.skewagg.singlekey.PlanHolisticAggregatesSortBased
import org.apache.spark.sql.skewagg.window.SplitSkewedWindow
import org.apache.spark.sql.skewagg.skewsplit.{
  CoalescePartialResultExchanges, SplitMergeOfPartialStates, SplitSkewedBucketsBelowAggregate,
  SplitSkewedJoinBelowAggregate, SplitSkewedShuffleBelowAggregate
}

/**
 * The skewagg entry point: `spark.sql.extensions=io.skewagg.SkewAggExtensions`.
 *
 * It only registers. Every rule checks `spark.skewagg.enabled` (and its own switch) each time it
 * runs, so one session can run a query with skewagg off and on.
 */
class SkewAggExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    // Session start: refuse a jar built for another Spark line, with a message saying which to use.
    BuildInfo.requireCompatibleSpark(SPARK_VERSION)
    // Config registry: make every spark.skewagg.* key known to SQLConf, so bad values fail at set,
    // and fail the session start on an invalid value in the job's config, naming it.
    SkewAggConf.registerAndCheckActiveContext()
    // Session start: warn once when the application's shuffles can have more partitions than
    // Spark records block sizes of exactly, which would hide a hot key from the run-time rules.
    AveragedBlockSizes.warnAtSessionStart()
    // Listener bus, once per application: record each executed query's explanation, and the task
    // times of jobs tagged 'skewagg-...', for the table functions below (clients without a driver
    // JVM: Spark Connect, SQL).
    ExplainedRuns.attachToActiveContext()
    TaggedTaskTimes.attachToActiveContext()
    // Listed twice in spark.sql.extensions: the rules are registered once.
    if (!RegisterOnce.firstTime(extensions)) return

    // Every rule, check and strategy below is registered guarded: if it throws while planning,
    // the query keeps Spark's own plan for that step, with one warning (PlanningFallback).
    // Function registry: skewagg_version(), how a session shows that skewagg is loaded.
    extensions.injectFunction(SkewAggVersionFunction.description)
    // Function registry: the rules' skew test and task slots, for skewagg.analyze from any client.
    extensions.injectFunction(SkewTestFunctions.skewTest)
    extensions.injectFunction(SkewTestFunctions.taskSlots)
    // Table function registry: a query's explanation, and the task times of tagged jobs, as rows
    // computed when the query runs (skewagg.explain and stage_report from any client).
    extensions.injectTableFunction(ExplainFunction.description)
    extensions.injectTableFunction(TaskTimesFunction.description)
    // Physical planning: the table functions' relations (answered on the driver as they run).
    extensions.injectPlannerStrategy(_ => PlanDriverRows)
    // Hint resolution: SKEW_AGG / NO_SKEW_AGG onto the aggregate they are written on.
    // (On Spark 3.5, which has no hint resolution hook, the resolution batch: the shim says.)
    HintResolutionPhase.inject(extensions, s => logical(ResolveSkewAggHints(s)))
    // Post-hoc resolution: a skewagg hint back on an aggregate that analysis rebuilt without it.
    extensions.injectPostHocResolutionRule(s => logical(RestoreSkewAggHints(s)))
    // Analysis check: columns named by a skewagg hint exist.
    extensions.injectCheckRule(s => check(CheckSkewAggHints(s)))
    // Analysis check: warn about spark.skewagg.* keys that are no skewagg setting (typos).
    extensions.injectCheckRule(s => check(WarnUnknownSkewAggSettings(s)))
    // Physical planning, first of skewagg's strategies on aggregates (after every optimizer
    // batch, so no optimizer rule reads its halves): local aggregation of one side before a
    // shuffled join (flushing, or full with SKEW_AGG), merged after the join's shuffle, finished
    // above the join.
    extensions.injectPlannerStrategy(s => strategy(LocalAggregateBeforeJoin(s)))
    // Physical planning: the partial aggregates that local aggregation puts below the join.
    extensions.injectPlannerStrategy(s => strategy(PlanPartialAggregates(s)))
    // Physical planning: (flushing) partial aggregate below a user repartition.
    extensions.injectPlannerStrategy(s => strategy(PartialAggregateBeforeRepartition(s)))
    // Physical planning: holistic aggregates (percentile, mode) of batch queries, one key at a
    // time.
    extensions.injectPlannerStrategy(s => strategy(PlanHolisticAggregatesSortBased(s)))
    // Adaptive query-stage preparation, first (as Spark's join selection comes before its
    // preparation rules): broadcast a join below a local aggregate whose side became small.
    extensions.injectQueryStagePrepRule(s => physical(BroadcastJoinBelowLocalAggregate(s)))
    // Adaptive query-stage preparation: split a skewed user repartition below an aggregate.
    extensions.injectQueryStagePrepRule(s => physical(SplitSkewedShuffleBelowAggregate(s)))
    // Adaptive query-stage preparation: split a skewed join below an aggregate, exchange partials.
    extensions.injectQueryStagePrepRule(s => physical(SplitSkewedJoinBelowAggregate(s)))
    // Adaptive query-stage preparation: read skewed buckets unbucketed below an aggregate.
    extensions.injectQueryStagePrepRule(s => physical(SplitSkewedBucketsBelowAggregate(s)))
    // Adaptive query-stage preparation: merge the heavy partial states of a few keys in two
    // levels (pieces of a skewed partition merged apart, then once more per key).
    extensions.injectQueryStagePrepRule(s => physical(SplitMergeOfPartialStates(s)))
    // Adaptive query-stage preparation: split the hot keys of a skewed window's partitions by
    // ranges of the window's order.
    extensions.injectQueryStagePrepRule(s => physical(SplitSkewedWindow(s)))
    // Adaptive query-stage preparation, last: record why each aggregate no rule rewrote was left
    // alone (the explanation prints it).
    extensions.injectQueryStagePrepRule(s => physical(LeftAloneReasons(s)))
    // Adaptive query-stage optimization: read the partial-result exchanges skewagg added in
    // coalesced partitions.
    extensions.injectQueryStageOptimizerRule(s => physical(CoalescePartialResultExchanges(s)))
    // Adaptive query-stage optimization: drop the merge after a join's shuffle where the local
    // aggregate before it found (nearly) unique keys.
    extensions.injectQueryStageOptimizerRule(s => physical(DropUnneededMergeAfterShuffle(s)))
    // Before columnar transitions (without adaptive execution, the one physical hook after
    // exchanges are placed): read skewed buckets unbucketed below an aggregate, as the adaptive
    // rule does. (Under adaptive execution it already ran in query-stage preparation and decides
    // from the same plan facts: running it again is a no-op.)
    extensions.injectColumnar(s =>
      beforeColumnarTransitions(SplitSkewedBucketsBelowAggregate(s)))
    // Before columnar transitions, without adaptive execution: the hot keys of a window's
    // partitions split by ranges of its order if its shuffle is skewed when it runs. (Under
    // adaptive execution the windows' shuffles are query stages by then, which it does not match.)
    extensions.injectColumnar(s =>
      beforeColumnarTransitions(SplitSkewedWindow(s, adaptive = false)))
    // Before columnar transitions, last: record why each aggregate no rule rewrote was left alone
    // (without adaptive execution; with it, in each new stage and the final plan).
    extensions.injectColumnar(s => beforeColumnarTransitions(LeftAloneReasons(s, adaptive = false)))
  }
}
