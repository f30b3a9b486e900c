package org.apache.spark.sql.skewagg

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.execution.datasources.BucketingUtils

/**
 * Physical rule, run once the plan's exchanges are in place (adaptive: query-stage preparation;
 * otherwise: before columnar transitions, the only later hook; see [[PlanColumnarHook]]).
 *
 * Matches: a partial aggregate over a bucketed file scan (through Project, Filter or Expand)
 * whose final aggregate relies on the bucketing instead of an exchange, where the bucket file
 * sizes, known at planning, are skewed by skewagg's thresholds (or the aggregate has the SKEW_AGG
 * hint): the hot bucket is read,
 * partially and finally aggregated by one task.
 *
 * Produces: the same scan without bucketing, so the hot bucket's files are split across tasks
 * like any other files; the partial aggregate on each split; an exchange of the partial results on
 * the grouping keys before the final aggregate.
 *
 * Refuses when skewagg or `spark.skewagg.bucketed.enabled` is off, the aggregate has the
 * NO_SKEW_AGG hint, the buckets are not skewed and there is no SKEW_AGG hint,
 * or any exchange it would add is not directly above a partial aggregate (for example when the
 * scan also feeds a join that needs its bucketing).
 */
case class SplitSkewedBucketsBelowAggregate(session: SparkSession) extends Rule[SparkPlan] {
  import PartialAggregates._

  override def apply(plan: SparkPlan): SparkPlan = {
    if (!SkewAggConf.enabled(conf, SkewAggConf.BUCKETED_ENABLED)) return plan
    val unbucketed = plan.transformDown {
      case partial @ SkewedBucketedScanBelow(skew) =>
        val reason = if (skew.nonEmpty) SkewAggLocalStageExec.describe("bucket", skew)
          else "SKEW_AGG hint"
        val plain = partial.transformDown {
          case scan: FileSourceScanExec if scan.bucketedScan =>
            val plain = scan.copy(disableBucketedScan = true)
            scan.logicalLink.foreach(plain.setLogicalLink)
            plain
        }
        SkewAggLocalStageExec.mark(plain, s"skewed buckets read unbucketed: $reason", skew.skewed.size)
    }
    if (unbucketed.fastEquals(plan)) plan
    else withCheapExchanges(plan, unbucketed, minAdded = 1).getOrElse(plan)
  }

  /**
   * A partial aggregate over a bucketed scan whose buckets are skewed (or with the SKEW_AGG
   * hint): the bucket sizes, listed once per partial aggregate.
   */
  private object SkewedBucketedScanBelow {
    def unapply(plan: SparkPlan): Option[SkewedPartitions] = plan match {
      case agg if isBottomPartial(agg) && agg.children.size == 1 && !SkewAggHints.forbidden(agg) =>
        scanBelow(agg.children.head)
          .map(scan => SkewedPartitions.find(bucketSizes(scan), conf))
          .filter(skew => skew.nonEmpty || SkewAggHints.forced(agg))
      case _ => None
    }
  }

  private def scanBelow(plan: SparkPlan): Option[FileSourceScanExec] = belowRowLocal(plan) match {
    case s: FileSourceScanExec if s.bucketedScan => Some(s)
    case _ => None
  }

  /** Bytes each task of the bucketed scan would read, as Spark groups files into buckets. */
  private def bucketSizes(scan: FileSourceScanExec): Array[Long] = {
    val numBuckets = scan.relation.bucketSpec.map(_.numBuckets).getOrElse(0)
    val tasks = scan.optionalNumCoalescedBuckets.getOrElse(numBuckets)
    val sizes = new Array[Long](tasks)
    scan.selectedPartitions.toPartitionArray.foreach { file =>
      BucketingUtils.getBucketId(file.toPath.getName).foreach { bucket =>
        if (scan.optionalBucketSet.forall(_.get(bucket))) sizes(bucket % tasks) += file.length
      }
    }
    sizes
  }
}

/**
 * Without adaptive execution Spark offers no physical-plan hook after `EnsureRequirements`
 * except the columnar rules, so planning-time rewrites that must see the final exchanges run
 * there too. Under adaptive execution the same rules already ran in query-stage preparation, and
 * they decide from the same plan facts, so running them again on a stage is a no-op.
 */
case class PlanColumnarHook(session: SparkSession) extends ColumnarRule {
  private val rules = Seq(SplitSkewedBucketsBelowAggregate(session))

  override def preColumnarTransitions: Rule[SparkPlan] = new Rule[SparkPlan] {
    override def apply(plan: SparkPlan): SparkPlan = rules.foldLeft(plan)((p, r) => r(p))
  }
}
