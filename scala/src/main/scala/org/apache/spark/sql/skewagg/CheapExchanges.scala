package org.apache.spark.sql.skewagg

import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.exchange.{EnsureRequirements, ShuffleExchangeLike}
import org.apache.spark.sql.internal.SQLConf

/**
 * The one definition of a skewagg exchange: a cheap exchange, one that shuffles the output of a
 * partial aggregate (at most one row per key and upstream task) between the halves of an
 * aggregate. Rules add them ([[withCheapExchanges]], sized by [[cheapExchangePartitions]]), the
 * cost model counts them as free (`io.skewagg.SkewAggCostEvaluator`), and those above a rewrite's
 * local stage ([[isAboveLocalStage]]) have their reads coalesced.
 */
object CheapExchanges {

  /**
   * A cheap exchange: it shuffles the output of a partial aggregate, at most one row per key and
   * upstream task, instead of the rows the aggregate read.
   */
  def isCheapExchange(plan: SparkPlan): Boolean = plan match {
    case e: ShuffleExchangeLike => PartialAggregates.isPartial(e.child)
    case _ => false
  }

  /**
   * Partitions for an exchange of partial results: more than Spark's bypass-merge threshold
   * (`spark.shuffle.sort.bypassMergeThreshold`, 200). Below it every map task writes one file per
   * partition, and with many tasks each writing a few partial rows that costs more than the
   * aggregation (docs/rewrites.md, "Partitions of an exchange of partial results").
   * Adaptive execution coalesces the small partitions afterwards, as usual.
   */
  def cheapExchangePartitions(requested: Int): Int = {
    val bypass = org.apache.spark.SparkEnv.get match {
      case null => 200
      case env => env.conf.getInt("spark.shuffle.sort.bypassMergeThreshold", 200)
    }
    math.max(requested, bypass + 1)
  }

  /** Marks the exchanges a plan had before a rewrite; copies of a node keep its tags. */
  private val ExistingExchange = TreeNodeTag[Unit]("skewagg.existingExchange")

  /**
   * `rewrite(original)` with the exchanges its distribution requirements now need, if every
   * exchange that adds (and at least `minAdded`) is cheap; otherwise (or when the rewrite changed
   * nothing) `original`. An exchange of `original` stays itself even where the rewrite gave it a
   * new child, and so a new instance (above a union, say).
   */
  def withCheapExchanges(original: SparkPlan, minAdded: Int)(
      rewrite: SparkPlan => SparkPlan): SparkPlan = {
    original.foreach {
      case e: ShuffleExchangeLike => e.setTagValue(ExistingExchange, ())
      case _ =>
    }
    val rewritten = rewrite(original)
    if (rewritten.fastEquals(original)) return original
    // Only cheap exchanges may be added (checked below), so their partition count is ours to set.
    val conf = SQLConf.get.clone()
    conf.setConf(SQLConf.SHUFFLE_PARTITIONS, cheapExchangePartitions(conf.numShufflePartitions))
    val ensured = SQLConf.withExistingConf(conf) {
      EnsureRequirements(optimizeOutRepartition = false).apply(rewritten)
    }
    val added = ensured.collect {
      case e: ShuffleExchangeLike if e.getTagValue(ExistingExchange).isEmpty => e
    }
    if (added.size >= minAdded && added.forall(isCheapExchange)) {
      added.foreach(_.setTagValue(Added, ()))
      ensured
    } else original
  }

  /** Marks the exchanges [[withCheapExchanges]] added; copies of a node keep its tags. */
  private val Added = TreeNodeTag[Unit]("skewagg.addedExchange")

  /**
   * An exchange a rewrite added ([[withCheapExchanges]]) or the rewrite's own exchange above its
   * local stage: an exchange of partial results that the user's settings did not ask for.
   */
  def isAddedBySkewagg(plan: SparkPlan): Boolean =
    plan.getTagValue(Added).isDefined || isAboveLocalStage(plan)

  /** A cheap exchange of what a skewagg local stage produced (the rewrite's own exchange). */
  def isAboveLocalStage(plan: SparkPlan): Boolean = isCheapExchange(plan) && (plan match {
    case e: ShuffleExchangeLike => PartialAggregates.withoutCodegen(e.child) match {
        case _: SkewAggLocalStageExec => true
        case _ => false
      }
    case _ => false
  })
}
