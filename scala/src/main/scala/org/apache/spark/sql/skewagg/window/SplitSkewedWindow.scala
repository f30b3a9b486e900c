package org.apache.spark.sql.skewagg.window

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.SortOrder
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{
  FilterExec, ProjectExec, SortExec, SparkPlan, TakeOrderedAndProjectExec
}
import org.apache.spark.sql.execution.adaptive.ShuffleQueryStageExec
import org.apache.spark.sql.execution.exchange.{ENSURE_REQUIREMENTS, ShuffleExchangeExec}
import org.apache.spark.sql.execution.window.{WindowExec, WindowGroupLimitExec}
import org.apache.spark.sql.skewagg.{
  CheapExchanges, Collations, FusedAggregates, PartialAggregates, SkewAggConf, SkewAggDecision,
  RecordedDecisions, SkewAggHints
}
import org.apache.spark.sql.skewagg.SkewAggDecision.{NotSkewed, Refused, Rewritten, SwitchedOff}
import org.apache.spark.sql.skewagg.window.SplitSkewedWindow.Rewrite

/**
 * Adaptive query-stage preparation rule (`adaptive`), and without adaptive execution a rule run
 * before columnar transitions ([[PlanningFallback.beforeColumnarTransitions]]).
 *
 * Matches: Spark's window (`WindowExec`, not a Python window) over the sort Spark placed for it,
 * over Project / Filter (deterministic) and the window's own shuffle (origin
 * ENSURE_REQUIREMENTS): adaptive, materialized with skewed partitions by skewagg's thresholds;
 * otherwise the exchange Spark planned, whose sizes are known only when it runs. The task holding
 * a hot key sorts and windows all its rows. With it, the windows on the same keys above it, each
 * over its sort or directly over the one below (a chain, which reads one shuffle).
 *
 * Produces: [[HotKeySplitWindowExec]] over the window's input: partitions that are not skewed
 * run Spark's sort and window; the hot keys of the skewed ones are split by ranges of the
 * window's order, each range seeded with what the ranges before it hold, so every row gets
 * Spark's result (a chain: every window of it, each by its own order). Nothing changes when no
 * partition is skewed (without adaptive execution, the operator finds that when the shuffle has
 * run, and runs Spark's sort and window).
 *
 * With the SKEW_AGG hint on the window, every partition of its shuffle is read as skewed (hot
 * keys are still found by the sample).
 *
 * A window without PARTITION BY (Spark moves every row to one partition, one task) is the same
 * split with one key: its partition split by ranges of its order when it outlasts an even share
 * of the stage on the task slots ([[HotKeySplitWindowExec.skewOf]]).
 *
 * Refuses (recorded on each window of the chain) when skewagg or `spark.skewagg.window.enabled` is
 * off, Spark limited a key's rows below the window (a top-N or `WindowGroupLimit` from a filter
 * on a rank), the hint NO_SKEW_AGG is on the window, a key is a collated
 * string (the split routes keys as binary rows), a function or frame cannot be split
 * ([[WindowSplitSupport]]), the input is not deterministic (it is read more than once; first and
 * last values are, but for ties), a window of a chain orders by a result of a window below it (the
 * routing samples the input's columns), or a node above relies on the window's output being
 * hash-partitioned by its keys (one partition without keys) where the exchange that would give
 * it back moves every row (a window the chain does not hold); an aggregate on those keys above
 * (a global one without keys) gets an exchange of its partial aggregates.
 */
case class SplitSkewedWindow(session: SparkSession, adaptive: Boolean = true)
    extends Rule[SparkPlan] {

  override def apply(plan: SparkPlan): SparkPlan = {
    if (!SkewAggConf.enabled(conf)) return plan
    // Each chain up to its top window; a window with one on the same keys above is in its chain.
    val chains = plan.collect { case w: WindowExec => chainTo(w) }
    val below = chains.flatMap(_.init)
    val tops = chains.filterNot(c => below.exists(_ eq c.last))
    for (chain <- tops; reason <- limitedBelow(chain.head)) {
      chain.foreach(RecordedDecisions.record(_, Refused(reason, Rewrite)))
    }
    val candidates = tops
      .flatMap(chain => inputOf(chain.head).map(chain -> _))
    candidates.foldLeft(plan) { case (current, (chain, input)) =>
      decide(chain, input) match {
        case None => current
        case Some((split, rewrite)) =>
          // A node above that needs the window's output partitioned by its keys (one partition
          // without keys) gets it through an exchange of partial aggregates (an aggregate on the
          // keys, a global aggregate; one Spark fused is split into its halves), or the windows
          // stay.
          var accepted = false
          val rewritten = FusedAggregates.splitWhere(current, readsWindow(chain.last)) { plan =>
            val replaced = CheapExchanges.withCheapExchanges(plan, minAdded = 0)(
              _.transformUp { case w if w eq chain.last => split })
            accepted = !(replaced eq plan)
            replaced
          }
          // Recorded only once taken: the record also goes on the stages below the windows,
          // which a plan that keeps the windows reads.
          val decision = if (accepted) rewrite
          else if (chain.head.partitionSpec.isEmpty) {
            Refused(
              s"${SplitSkewedWindow.OneTask}; a node above relies on the window's output being " +
                "one partition (a window without PARTITION BY over other nodes), which " +
                "splitting it would break, and gathering it again would move every row.",
              Rewrite)
          } else {
            Refused(
              "a node above relies on the window's output being partitioned by its keys (a " +
                "window on them over other nodes), which splitting a key would break, and " +
                "repartitioning would move every row.",
              Rewrite)
          }
          chain.foreach(RecordedDecisions.record(_, decision))
          rewritten
      }
    }
  }

  /** A partial aggregate of `window`'s rows (through Project / Filter). */
  private def readsWindow(window: WindowExec)(plan: SparkPlan): Boolean =
    PartialAggregates.isPartial(plan) && plan.children.size == 1 &&
      (PartialAggregates.belowRowLocal(plan.children.head) eq window)

  /**
   * The split windows and the rewrite's record, or None with the reason recorded on each window:
   * `chain` bottom first, the bottom one over its sort and `input`.
   */
  private def decide(
      chain: Seq[WindowExec],
      input: WindowInput): Option[(SparkPlan, SkewAggDecision)] = {
    val sizes = input.sizes
    val hints = chain.flatMap(SkewAggHints.ofWindow)
    val forced = hints.exists(_.force)
    val skew = sizes.map { s =>
      HotKeySplitWindowExec.skewOf(s, forced, conf, HotKeySplitWindowExec.slotsFor(s.length, conf))
    }
    def record(decision: SkewAggDecision) = chain.foreach(RecordedDecisions.record(_, decision))
    def refuse(reason: String) = { record(Refused(reason, Rewrite)); None }
    val keys = chain.head.partitionSpec
    val inputColumns = sortInput(chain.head).outputSet
    val global = keys.isEmpty
    if (hints.exists(!_.force)) {
      refuse(s"hint ${SkewAggHints.Forbid}.")
    } else if (skew.exists(!_.nonEmpty)) {
      val notSkewed = NotSkewed.ofShuffle("the window's shuffle", sizes.get, skew.get, conf)
      if (global) {
        refuse(s"${SplitSkewedWindow.OneTask} of ${skew.get.format(sizes.get.sum)}, left " +
          s"there: ${notSkewed.why}, so splitting it by order would not pay.")
      } else {
        record(notSkewed)
        None
      }
    } else if (!conf.getConf(SkewAggConf.WINDOW_ENABLED)) {
      record(SwitchedOff(
        if (global) s"${SplitSkewedWindow.OneTask}, not split by order"
        else "hot keys of the window not split",
        SkewAggConf.WINDOW_ENABLED))
      None
    } else if (!keys.forall(k => Collations.binaryStable(k.dataType))) {
      refuse("a PARTITION BY key is a collated string: keys equal but not byte-equal would be " +
        "routed apart.")
    } else if (!input.nodes.forall(_.expressions.forall(_.deterministic)) ||
      !chain.forall(_.windowExpression.forall(WindowSplitSupport.deterministicButTies))) {
      refuse("the window's input is not deterministic, and a split reads it more than once.")
    } else if (!chain.forall(_.orderSpec.forall(_.references.subsetOf(inputColumns)))) {
      refuse("a window of the chain on these keys orders by a result of a window below it; the " +
        "split routes by the input's columns.")
    } else {
      chain.iterator
        .map(w =>
          WindowSplitSupport.functions(w.windowExpression, w.orderSpec, chain.size > 1, conf))
        .collectFirst { case Left(reason) => reason } match {
        case Some(reason) => refuse(reason)
        case None =>
          val windows = chain.map { w =>
            val sort = w.child match {
              case s: SortExec => Some(s.sortOrder)
              case _ => None
            }
            ChainedWindow(w.windowExpression, w.orderSpec, sort)
          }
          val split = HotKeySplitWindowExec(
            windows,
            keys,
            forced,
            sortInput(chain.head))
          split.setLogicalLink(chain.last.logicalLink.orNull)
          val what = if (chain.size == 1) "the window's" else s"a chain of ${chain.size} windows'"
          val rewrite = Rewritten(
            (skew, global) match {
              case (None, false) =>
                s"hot keys of $what partitions split by order if its shuffle is skewed when " +
                  "it runs (without adaptive execution its sizes are known only then)"
              case (None, true) =>
                s"${SplitSkewedWindow.OneTask}: split by ranges of its order when its input " +
                  "has run, if it outlasts an even share of the stage (without adaptive " +
                  "execution its size is known only then)"
              case (Some(s), false) =>
                s"hot keys of $what skewed partitions split by order: " +
                  HotKeySplitWindowExec.describe(s, forced)
              case (Some(s), true) =>
                s"${HotKeySplitWindowExec.describe(s, forced, global = true)}: split by " +
                  "ranges of its order"
            },
            Rewrite)
          Some((split, rewrite))
      }
    }
  }

  /**
   * The windows on the same keys below `window`, each over the sort Spark placed for it or
   * directly over the one below (its rows already in an order it reads), and `window`: bottom
   * first.
   */
  private def chainTo(window: WindowExec): Seq[WindowExec] = {
    def sameKeys(lower: WindowExec) =
      lower.partitionSpec.size == window.partitionSpec.size &&
        lower.partitionSpec.zip(window.partitionSpec).forall { case (a, b) => a.semanticEquals(b) }
    (window.child match {
      case SortExec(order, false, lower: WindowExec, _)
          if sameKeys(lower) && sortsFor(window, order) => chainTo(lower)
      case lower: WindowExec if sameKeys(lower) => chainTo(lower)
      case _ => Nil
    }) :+ window
  }

  /** `order` is what `window` needs, its keys first. */
  private def sortsFor(window: WindowExec, order: Seq[SortOrder]): Boolean =
    SortOrder.orderingSatisfies(order, window.requiredChildOrdering.head) &&
      order.take(window.partitionSpec.size) ==
      window.requiredChildOrdering.head.take(window.partitionSpec.size)

  /**
   * Why `window` reads few rows of a key, when Spark limited them below it (from a filter on a
   * rank or row number): the split's own stages would cost more than the rows it could spread.
   */
  private def limitedBelow(window: WindowExec): Option[String] = sortInput(window) match {
    case t: TakeOrderedAndProjectExec =>
      Some(s"Spark keeps only the first ${t.limit} rows of the window's order below it " +
        "(TakeOrderedAndProject, from a filter on a row number): the window reads at most " +
        s"${t.limit} rows, nothing to split.")
    case g: WindowGroupLimitExec =>
      val (rows, read) =
        if (window.partitionSpec.isEmpty) ("the", "")
        else ("each key's", " of a key")
      Some(s"Spark keeps only $rows first ${g.limit} rows by ${g.rankLikeFunction.prettyName} " +
        "on both sides of the window's shuffle (WindowGroupLimit, from a filter on it): the " +
        s"window reads at most ${g.limit} rows$read per map task, nothing to split.")
    case _ => None
  }

  /** What the window's sort reads ([[inputOf]]); without keys and order, maybe its child. */
  private def sortInput(window: WindowExec): SparkPlan = window.child match {
    case SortExec(order, false, input, _) if sortsFor(window, order) => input
    case other => other
  }

  /**
   * Between a window's sort and its shuffle: the Project / Filter `nodes`, and the shuffle's
   * `sizes` by partition (None: not run yet, without adaptive execution).
   */
  private case class WindowInput(nodes: Seq[SparkPlan], sizes: Option[Array[Long]])

  /**
   * The window's input, when the window sits on the sort Spark placed for it (none for a window
   * without keys and order), over Project / Filter and its own shuffle: a materialized stage
   * (adaptive) or a planned exchange (otherwise).
   */
  private def inputOf(window: WindowExec): Option[WindowInput] = {
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
    val input = sortInput(window)
    if ((input ne window.child) || window.requiredChildOrdering.head.isEmpty) down(input, Nil)
    else None
  }
}

object SplitSkewedWindow {

  /** The rewrite's name in its records (`SkewAggDecision.Rewritten` and `Refused`). */
  val Rewrite = "hot keys of a window split by order"

  /** What Spark does with a window without PARTITION BY, as its records say it. */
  val OneTask = "the window has no PARTITION BY: Spark runs it in one task"
}
