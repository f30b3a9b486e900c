package org.apache.spark.sql.skewagg.window

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.SortOrder
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.util.UnsafeRowUtils
import org.apache.spark.sql.execution.{ColumnarRule, FilterExec, ProjectExec, SortExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.ShuffleQueryStageExec
import org.apache.spark.sql.execution.exchange.{
  ENSURE_REQUIREMENTS, ShuffleExchangeExec, ValidateRequirements
}
import org.apache.spark.sql.execution.window.WindowExec
import org.apache.spark.sql.skewagg.{SkewAggConf, SkewAggDecisions, SkewAggHints}
import org.apache.spark.sql.skewagg.SkewAggDecision.{NotSkewed, Refused, Rewritten, SwitchedOff}

/**
 * Adaptive query-stage preparation rule (`adaptive`), and without adaptive execution a rule run
 * before columnar transitions ([[SplitSkewedWindowWithoutAdaptive]]).
 *
 * Matches: Spark's window (`WindowExec`, not a Python window) over the sort Spark placed for it,
 * over Project / Filter (deterministic) and the window's own shuffle (origin
 * ENSURE_REQUIREMENTS): adaptive, materialized with skewed partitions by skewagg's thresholds;
 * otherwise the exchange Spark planned, whose sizes are known only when it runs. The task holding
 * a hot key sorts and windows all its rows.
 *
 * Produces: [[HotKeySplitWindowExec]] over the window's input: partitions that are not skewed
 * run Spark's sort and window; the hot keys of the skewed ones are split by ranges of the
 * window's order, each range seeded with what the ranges before it hold, so every row gets
 * Spark's result. Nothing changes when no partition is skewed (without adaptive execution, the
 * operator finds that when the shuffle has run, and runs Spark's sort and window).
 *
 * With the SKEW_AGG hint on the window, every partition of its shuffle is read as skewed (hot
 * keys are still found by the sample).
 *
 * Refuses (recorded on the window) when skewagg or `spark.skewagg.window.enabled` is off, the
 * hint NO_SKEW_AGG is on the window, the window has no PARTITION BY, a key is a collated string
 * (the split routes keys as binary rows), a function or frame cannot be split
 * ([[WindowSplitSupport]]), the input is not deterministic (it is read more than once; first and
 * last values are, but for ties), or a node above relies on the window's output being
 * hash-partitioned by its keys (another window or aggregate on those keys).
 */
case class SplitSkewedWindow(session: SparkSession, adaptive: Boolean = true)
    extends Rule[SparkPlan] {

  override def apply(plan: SparkPlan): SparkPlan = {
    if (!SkewAggConf.enabled(conf)) return plan
    val candidates = plan.collect { case w: WindowExec => inputOf(w).map(w -> _) }.flatten
    candidates.foldLeft(plan) { case (current, (window, input)) =>
      decide(window, input) match {
        case None => current
        case Some(split) =>
          val rewritten = current.transformUp { case w if w eq window => split }
          if (ValidateRequirements.validate(rewritten)) rewritten
          else {
            SkewAggDecisions.record(
              window,
              Refused("a node above relies on the window's output being partitioned by its " +
                "keys (another window or aggregate on them), which splitting a key would break."))
            current
          }
      }
    }
  }

  /** The split window, or None with the reason recorded on `window`. */
  private def decide(window: WindowExec, input: WindowInput): Option[SparkPlan] = {
    val sizes = input.sizes
    val hint = SkewAggHints.ofWindow(window)
    val forced = hint.exists(_.force)
    val skew = sizes.map(HotKeySplitWindowExec.skewOf(_, forced, conf))
    def refuse(reason: String) = { SkewAggDecisions.record(window, Refused(reason)); None }
    if (hint.exists(!_.force)) {
      refuse(s"hint ${SkewAggHints.Forbid}.")
    } else if (skew.exists(!_.nonEmpty)) {
      SkewAggDecisions.record(window, NotSkewed.of("the window's shuffle", sizes.get, conf))
      None
    } else if (!conf.getConf(SkewAggConf.WINDOW_ENABLED)) {
      SkewAggDecisions.record(
        window,
        SwitchedOff("hot keys of the window not split", SkewAggConf.WINDOW_ENABLED))
      None
    } else if (window.partitionSpec.isEmpty) {
      refuse("the window has no PARTITION BY: its one partition is not split.")
    } else if (!window.partitionSpec.forall(k => UnsafeRowUtils.isBinaryStable(k.dataType))) {
      refuse("a PARTITION BY key is a collated string: keys equal but not byte-equal would be " +
        "routed apart.")
    } else if (!input.nodes.forall(_.expressions.forall(_.deterministic)) ||
      !window.windowExpression.forall(WindowSplitSupport.deterministicButTies)) {
      refuse("the window's input is not deterministic, and a split reads it more than once.")
    } else {
      WindowSplitSupport.functions(window.windowExpression, window.orderSpec, conf) match {
        case Left(reason) => refuse(reason)
        case Right(_) =>
          val split = HotKeySplitWindowExec(
            window.windowExpression,
            window.partitionSpec,
            window.orderSpec,
            window.child.asInstanceOf[SortExec].sortOrder,
            forced,
            window.child.asInstanceOf[SortExec].child)
          split.setLogicalLink(window.logicalLink.orNull)
          SkewAggDecisions.record(
            window,
            Rewritten(skew.fold(
              "hot keys of the window's partitions split by order if its shuffle is skewed " +
                "when it runs (without adaptive execution its sizes are known only then)")(s =>
              "hot keys of the window's skewed partitions split by order: " +
                HotKeySplitWindowExec.describe(s, forced))))
          Some(split)
      }
    }
  }

  /**
   * Between a window's sort and its shuffle: the Project / Filter `nodes`, and the shuffle's
   * `sizes` by partition (None: not run yet, without adaptive execution).
   */
  private case class WindowInput(nodes: Seq[SparkPlan], sizes: Option[Array[Long]])

  /**
   * The window's input, when the window sits on the sort Spark placed for it, over Project /
   * Filter and its own shuffle: a materialized stage (adaptive) or a planned exchange (otherwise).
   */
  private def inputOf(window: WindowExec): Option[WindowInput] = window.child match {
    case SortExec(order, false, sortInput, _)
        if SortOrder.orderingSatisfies(order, window.requiredChildOrdering.head) &&
          order.take(window.partitionSpec.size) ==
          window.requiredChildOrdering.head.take(window.partitionSpec.size) =>
      def down(plan: SparkPlan, nodes: Seq[SparkPlan]): Option[WindowInput] = plan match {
        case p @ (_: ProjectExec | _: FilterExec) => down(p.children.head, nodes :+ p)
        case s: ShuffleQueryStageExec
            if adaptive && s.isMaterialized && s.mapStats.isDefined &&
              s.shuffle.shuffleOrigin == ENSURE_REQUIREMENTS =>
          Some(WindowInput(nodes, Some(s.mapStats.get.bytesByPartitionId)))
        case e: ShuffleExchangeExec if !adaptive && e.shuffleOrigin == ENSURE_REQUIREMENTS =>
          Some(WindowInput(nodes, None))
        case _ => None
      }
      down(sortInput, Nil)
    case _ => None
  }
}

/**
 * Without adaptive execution Spark offers no physical-plan hook after `EnsureRequirements` but
 * the columnar rules: [[SplitSkewedWindow]] over the exchanges Spark planned, before columnar
 * transitions. (Under adaptive execution the windows' shuffles are query stages by then, which
 * this does not match.)
 */
case class SplitSkewedWindowWithoutAdaptive(session: SparkSession) extends ColumnarRule {
  override def preColumnarTransitions: Rule[SparkPlan] = SplitSkewedWindow(session, false)
}
