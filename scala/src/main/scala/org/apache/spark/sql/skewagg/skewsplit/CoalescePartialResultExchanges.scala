package org.apache.spark.sql.skewagg.skewsplit

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.SparkPlan
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
 * Matches: a materialized exchange that a skewagg rule added between a partial aggregate (marked
 * by [[SkewAggLocalStageExec]]) and its final aggregate, read whole (no shuffle read on it yet)
 * and the only stage the plan reads.
 *
 * Produces: the same exchange read in coalesced partitions, sized as Spark's
 * CoalesceShufflePartitions sizes them (advisory partition size, at least the default
 * parallelism and the task slots splits are planned for). Such an exchange carries one row per
 * key and split; read in `spark.sql.shuffle.partitions` tasks it costs a full stage of near-empty
 * tasks.
 *
 * Refuses when skewagg or `spark.skewagg.exchange.coalesce.enabled` is off, when Spark's own
 * coalescing already ran on it, for exchanges that keep a user's repartition (they follow the
 * user's settings), and when the plan reads more than one stage (they must stay co-partitioned).
 * Being an AQEShuffleReadRule, adaptive execution drops its result if it would break a
 * distribution requirement.
 */
case class CoalescePartialResultExchanges(session: SparkSession) extends SkewAggShuffleReadRule {

  /** Public, so [[PlanningFallback]]'s guard of this rule can say the same. */
  override def supportedShuffleOrigins: Seq[ShuffleOrigin] = Seq(ENSURE_REQUIREMENTS)

  override def apply(plan: SparkPlan): SparkPlan = {
    if (!SkewAggConf.enabled(conf, SkewAggConf.EXCHANGE_COALESCE_ENABLED)) return plan
    val stages = plan.collectLeaves().collect { case s: ExchangeQueryStageExec => s }
    val alreadyRead = plan.collect { case r: AQEShuffleReadExec => r }.nonEmpty
    stages match {
      case Seq(stage: ShuffleQueryStageExec)
          if !alreadyRead && stage.mapStats.isDefined &&
            isSupported(stage.shuffle) && CheapExchanges.isAboveLocalStage(stage.shuffle) =>
        val specs = ShufflePartitionsUtil.coalescePartitions(
          Seq(stage.mapStats),
          Seq(None),
          advisoryTargetSize = conf.getConf(SQLConf.ADVISORY_PARTITION_SIZE_IN_BYTES),
          // At least a partition per slot the splits were planned for (TaskSlots).
          minNumPartitions = math.max(
            session.sparkContext.defaultParallelism,
            TaskSlots.of(conf, stage.shuffle.numPartitions)),
          minPartitionSize = conf.getConf(SQLConf.COALESCE_PARTITIONS_MIN_PARTITION_SIZE))
        specs.headOption.filter(_.size < stage.shuffle.numPartitions) match {
          case Some(coalesced) =>
            plan.transformUp {
              case s: ShuffleQueryStageExec if s eq stage =>
                AQEShuffleReadExec(s, coalesced)
            }
          case None => plan
        }
      case _ => plan
    }
  }

}
