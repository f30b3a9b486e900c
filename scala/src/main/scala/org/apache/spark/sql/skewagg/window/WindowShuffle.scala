package org.apache.spark.sql.skewagg.window

import org.apache.spark.MapOutputStatistics
import org.apache.spark.sql.execution.{CoalescedPartitionSpec, ShufflePartitionSpec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.{AQEShuffleReadExec, ShuffleQueryStageExec}
import org.apache.spark.sql.execution.exchange.{ReusedExchangeExec, ShuffleExchangeLike}
import org.apache.spark.sql.skewagg.MapOutputSizes
import org.apache.spark.sql.skewagg.hotkey.HotKeySplitSteps

/**
 * The window's shuffle below its input, as [[HotKeySplitWindowJobs]] reads it: a materialized
 * adaptive query stage (maybe read coalesced), or, without adaptive execution, the exchange
 * Spark planned, whose map stage the split runs itself.
 */
private[window] sealed trait WindowShuffle {

  /** The map outputs' sizes by reducer, once the map stage has run (None: no map task). */
  def statistics: Option[MapOutputStatistics]

  /** [[statistics]] with each reducer's sizes by map output, read from Spark's tracker. */
  def sizes: Option[WindowShuffleSizes] = statistics.map { stats =>
    WindowShuffleSizes(stats.bytesByPartitionId, MapOutputSizes.of(stats.shuffleId, _))
  }

  /** How Spark reads the shuffle: its read's specs, or one spec per reducer. */
  def specs(sizes: Array[Long]): Seq[ShufflePartitionSpec]

  /** `input` (the window's input over this shuffle), reading only `specs` of the shuffle. */
  def reading(input: SparkPlan, specs: Seq[ShufflePartitionSpec]): SparkPlan
}

private[window] object WindowShuffle {

  /** The shuffle below `input`, through Project / Filter (and a codegen stage's wrappers). */
  def below(input: SparkPlan): WindowShuffle = input match {
    case s: ShuffleQueryStageExec => AdaptiveStage(s, None)
    case r @ AQEShuffleReadExec(s: ShuffleQueryStageExec, _) => AdaptiveStage(s, Some(r))
    case e: ShuffleExchangeLike => PlannedExchange(e, e)
    case r @ ReusedExchangeExec(_, e: ShuffleExchangeLike) => PlannedExchange(e, r)
    case other => below(other.children.head)
  }

  private def oneSpecPerReducer(sizes: Array[Long]): Seq[ShufflePartitionSpec] =
    sizes.indices.map(i => CoalescedPartitionSpec(i, i + 1, sizes(i)))

  /** A finished stage of adaptive execution, read by `read` (None: each partition alone). */
  case class AdaptiveStage(stage: ShuffleQueryStageExec, read: Option[AQEShuffleReadExec])
      extends WindowShuffle {
    override def statistics: Option[MapOutputStatistics] = stage.mapStats
    override def specs(sizes: Array[Long]): Seq[ShufflePartitionSpec] =
      read.map(_.partitionSpecs).getOrElse(oneSpecPerReducer(sizes))
    override def reading(input: SparkPlan, specs: Seq[ShufflePartitionSpec]): SparkPlan = {
      val newRead = AQEShuffleReadExec(stage, specs)
      input.transformUp {
        case r: AQEShuffleReadExec if read.contains(r) => newRead
        case s: ShuffleQueryStageExec if (s eq stage) && read.isEmpty => newRead
      }
    }
  }

  /**
   * The exchange Spark planned without adaptive execution (`node`: it, or a reuse of it): its
   * map stage is run once, by the first to ask (as Spark's own read would run it).
   */
  case class PlannedExchange(exchange: ShuffleExchangeLike, node: SparkPlan)
      extends WindowShuffle {
    override def statistics: Option[MapOutputStatistics] =
      Option(HotKeySplitSteps.awaited(ShuffleJobs.submit(exchange)))
    override def specs(sizes: Array[Long]): Seq[ShufflePartitionSpec] = oneSpecPerReducer(sizes)
    override def reading(input: SparkPlan, specs: Seq[ShufflePartitionSpec]): SparkPlan =
      input.transformUp {
        case n if n eq node => ShuffleSpecsReadExec(node.output, exchange, specs)
      }
  }
}
