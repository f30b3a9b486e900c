package org.apache.spark.sql.skewagg.skewsplit

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.{SparkPlan, UnionExec}
import org.apache.spark.sql.execution.adaptive.{
  AQEShuffleReadExec, ExchangeQueryStageExec, ShufflePartitionsUtil, ShuffleQueryStageExec
}
import org.apache.spark.sql.execution.exchange.{
  ENSURE_REQUIREMENTS, ShuffleExchangeLike, ShuffleOrigin
}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  CheapExchanges, SkewAggConf, SkewAggLocalStageExec, SkewAggShuffleReadRule, TaskSlots
}

/**
 * Adaptive query-stage optimizer rule (runs on each new stage's plan, after Spark's own
 * partition coalescing).
 *
 * Matches: a materialized exchange that a skewagg rule added between a partial aggregate and its
 * final aggregate (above a [[SkewAggLocalStageExec]], or placed by `CheapExchanges`), read whole
 * (no shuffle read on it yet) and the only stage the plan, or a branch of a union in it, reads.
 *
 * Produces: the same exchange read in coalesced partitions, sized as Spark's
 * CoalesceShufflePartitions sizes them (advisory partition size, at least the default
 * parallelism and the task slots splits are planned for; where those are set, as Spark does with
 * a minimum partition number, no minimum partition size). Such an exchange carries one row per
 * key and split; read in `spark.sql.shuffle.partitions` tasks it costs a full stage of near-empty
 * tasks.
 *
 * Refuses when skewagg or `spark.skewagg.exchange.coalesce.enabled` is off, when Spark's own
 * coalescing already ran on it, for exchanges that keep a user's repartition (they follow the
 * user's settings), and when the plan (the union branch) reads more than one stage (they must
 * stay co-partitioned).
 * Being an AQEShuffleReadRule, adaptive execution drops its result if it would break a
 * distribution requirement.
 */
case class CoalescePartialResultExchanges(session: SparkSession) extends SkewAggShuffleReadRule {

  /** Public, so [[PlanningFallback]]'s guard of this rule can say the same. */
  override def supportedShuffleOrigins: Seq[ShuffleOrigin] = Seq(ENSURE_REQUIREMENTS)

  override def apply(plan: SparkPlan): SparkPlan = {
    if (!SkewAggConf.enabled(conf, SkewAggConf.EXCHANGE_COALESCE_ENABLED)) return plan
    coalesced(plan).getOrElse(plan.transformUp {
      // The branches of a union need not be co-partitioned: each is read as a plan of its own.
      case u: UnionExec => u.withNewChildren(u.children.map(b => coalesced(b).getOrElse(b)))
    })
  }

  /** `plan` with its only stage read coalesced, if it reads one such exchange whole. */
  private def coalesced(plan: SparkPlan): Option[SparkPlan] = {
    val stages = plan.collectLeaves().collect { case s: ExchangeQueryStageExec => s }
    val alreadyRead = plan.collect { case r: AQEShuffleReadExec => r }.nonEmpty
    stages match {
      case Seq(stage: ShuffleQueryStageExec)
          if !alreadyRead && stage.mapStats.isDefined &&
            isSupported(stage.shuffle) && CheapExchanges.isAddedBySkewagg(stage.shuffle) =>
        val slotsSet = conf.getConf(SkewAggConf.SKEW_TASK_SLOTS) > 0
        val specs = ShufflePartitionsUtil.coalescePartitions(
          Seq(stage.mapStats),
          Seq(None),
          advisoryTargetSize = conf.getConf(SQLConf.ADVISORY_PARTITION_SIZE_IN_BYTES),
          // At least a partition per slot the splits were planned for (TaskSlots).
          minNumPartitions = math.max(
            session.sparkContext.defaultParallelism,
            TaskSlots.of(conf, stage.shuffle.numPartitions)),
          // As Spark's coalescing with a minimum partition number: no minimum size where the
          // task slots are set (each slot then gets a partition, however small).
          minPartitionSize =
            if (slotsSet) 0L else conf.getConf(SQLConf.COALESCE_PARTITIONS_MIN_PARTITION_SIZE))
        specs.headOption.filter(_.size < stage.shuffle.numPartitions).map { coalesced =>
          plan.transformUp {
            case s: ShuffleQueryStageExec if s eq stage => AQEShuffleReadExec(s, coalesced)
          }
        }
      case _ => None
    }
  }
}
