package org.apache.spark.sql.skewagg.skewsplit

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.execution.{FileSourceScanExec, SortExec, SparkPlan, UnionExec}
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.execution.datasources.BucketingUtils
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.skewagg.{
  FusedAggregates, SkewAggConf, RecordedDecisions, SkewAggHints, SkewAggLocalStageExec,
  SkewedPartitions
}
import org.apache.spark.sql.skewagg.SkewAggDecision.{NotSkewed, Rewritten, SwitchedOff}
import org.apache.spark.sql.skewagg.skewsplit.SplitSkewedBucketsBelowAggregate.Rewrite
import org.apache.spark.util.collection.BitSet

/**
 * Physical rule, run once the plan's exchanges are in place (adaptive: query-stage preparation;
 * otherwise: before columnar transitions, the only later hook, where
 * [[PlanningFallback.beforeColumnarTransitions]] runs it).
 *
 * Matches: the aggregates Spark planned for one aggregate over a bucketed file scan, through
 * Project, Filter, Expand and Sort only (no exchange), the top one relying on the bucketing for
 * its distribution instead of an exchange, where the buckets are skewed by skewagg's thresholds
 * (`spark.skewagg.skew.*`), measured at planning in rows from the Parquet footers (up to
 * `spark.skewagg.bucketed.maxFootersRead` files; a hot key compresses to few bytes per row, so
 * bytes understate its work) or else in file bytes, or where the aggregate has the SKEW_AGG
 * hint: the hot bucket is read, partially and finally aggregated by one task. Only one
 * aggregate's operators: adaptive execution re-plans a materialized stage's part of the plan from
 * the first physical node linked to that stage's logical aggregate, which must be the union
 * (tested with an aggregate above).
 *
 * Produces: a union of the same operators twice. Once over the buckets that are not skewed, read
 * bucketed as before (no exchange); once over the skewed buckets, read without bucketing so their
 * files are split across tasks (by rows where the footers were read: [[RowGroupPiecesScanExec]],
 * pieces of about the per-slot share; otherwise Spark's
 * byte-sized splits), with the partial aggregate on each split and
 * an exchange of the partial results on the grouping keys (one partition per skewed bucket)
 * before the final aggregate. Buckets partition the grouping keys (every aggregate relying on
 * them groups by the bucket columns), so no group has rows on both sides of the union and the
 * union is exact. With the hint and no skewed bucket, every bucket is read unbucketed (no union).
 *
 * Refuses when skewagg or `spark.skewagg.bucketed.enabled` is off, an aggregate has the
 * NO_SKEW_AGG hint, the buckets are not skewed and there is no SKEW_AGG hint, or any exchange
 * the rewrite needs is not directly above a partial aggregate (for example when the aggregate's
 * bucketed output partitioning feeds a join that needs it, which a union does not keep).
 */
case class SplitSkewedBucketsBelowAggregate(session: SparkSession) extends Rule[SparkPlan] {
  import org.apache.spark.sql.skewagg.PartialAggregates._
  import org.apache.spark.sql.skewagg.CheapExchanges.{withCheapExchanges}

  override def apply(plan: SparkPlan): SparkPlan = {
    if (!SkewAggConf.enabled(conf)) return plan
    if (!conf.getConf(SkewAggConf.BUCKETED_ENABLED)) {
      plan.foreach {
        case top @ AggregatesOverBucketedScan(scan, _)
            if relies(top) && measure(scan)._1.nonEmpty =>
          RecordedDecisions.record(
            top,
            SwitchedOff("no split read of the skewed buckets", SkewAggConf.BUCKETED_ENABLED))
        case _ =>
      }
      return plan
    }
    FusedAggregates.splitWhere(plan, AggregatesOverBucketedScan.unapply(_).isDefined) {
      withCheapExchanges(_, minAdded = 1)(splitSkewedBuckets)
    }
  }

  /**
   * `plan` with the topmost aggregate chain over a skewed bucketed scan split (not below it). A
   * union this rule made is left as it is: the rule runs again on plans it rewrote (each
   * query-stage preparation, and the columnar hook on each stage), and its branch of buckets that
   * were not skewed, measured alone, may look skewed again (docs/testing.md, bugs found).
   */
  private def splitSkewedBuckets(plan: SparkPlan): SparkPlan = plan match {
    case u: UnionExec if u.getTagValue(SplitUnion).isDefined => u
    case top @ AggregatesOverBucketedScan(scan, aggregates)
        if relies(top) && top.logicalLink.isDefined &&
          aggregates.forall(_.logicalLink == top.logicalLink) &&
          aggregates.exists(isBottomPartial) && !aggregates.exists(SkewAggHints.forbidden) =>
      val (skew, sizes, bytes) = measure(scan)
      if (skew.nonEmpty || aggregates.exists(SkewAggHints.forced)) {
        split(top, aggregates, scan, skew)
      } else {
        // On the bottom partial: the node a fused aggregate takes its halves' records from.
        aggregates.filter(isBottomPartial).foreach(RecordedDecisions.record(
          _,
          NotSkewed.of("the buckets read", sizes, bytes, skew, conf)))
        top
      }
    case other => other.withNewChildren(other.children.map(splitSkewedBuckets))
  }

  /** An aggregate relying on its input's partitioning (it requires a distribution). */
  private def relies(plan: SparkPlan): Boolean = plan match {
    case a: BaseAggregateExec => a.requiredChildDistributionExpressions.exists(_.nonEmpty)
    case _ => false
  }

  /**
   * `top` over the skewed buckets of `scan` read unbucketed (all its buckets when `skew` is
   * empty: the hint), in a union with `top` over the other buckets read as before.
   */
  private def split(
      top: SparkPlan,
      aggregates: Seq[BaseAggregateExec],
      scan: FileSourceScanExec,
      skew: SkewedPartitions): SparkPlan = {
    val buckets = selectedBuckets(scan)
    val tasks = scan.optionalNumCoalescedBuckets.getOrElse(buckets.length)
    val skewedTasks = skew.skewed.map(_._1).toSet
    val (hot, cold) =
      if (skew.nonEmpty) buckets.partition(b => skewedTasks.contains(b % tasks)) else (buckets, Nil)
    if (hot.isEmpty) return top // every bucket pruned
    val hotRead = inPieces(scan, hot, skew)
    val inRowPieces = hotRead match {
      case p: RowGroupPiecesScanExec =>
        f": read in ${p.pieces.size} pieces of about ${p.pieces.map(_.rows).sorted.apply(
            p.pieces.size / 2)}%,d rows"
      case _ => ""
    }
    val reason =
      (if (skew.nonEmpty) SkewAggLocalStageExec.describe("bucket", skew)
       else "SKEW_AGG hint") + inRowPieces
    // One partition per hot bucket: its final task merges that bucket's partial rows, at most
    // as many as the bucket's rows that one task read before.
    val keys = aggregates.filter(relies).last.requiredChildDistributionExpressions.get
    val unbucketed = withScan(top, scan, hotRead).transformUp {
      case partial
          if isBottomPartial(partial) && partial.children.size == 1 &&
            isScan(belowSortsAndRowLocal(partial.children.head)) =>
        ShuffleExchangeExec(
          HashPartitioning(keys, hot.size),
          SkewAggLocalStageExec.mark(
            partial,
            Rewritten(s"skewed buckets read unbucketed: $reason", Rewrite),
            skew.skewed.size))
    }
    if (cold.isEmpty) unbucketed
    else {
      val asBefore = withScan(top, scan, readOnly(scan, cold, bucketed = true))
      asBefore.foreach {
        case a: BaseAggregateExec => RecordedDecisions.record(
            a,
            Rewritten(
              "the buckets that " +
                s"are not skewed, read bucketed as before; the skewed ones ($reason) are read " +
                "unbucketed in the other branch of a union",
              Rewrite))
        case _ =>
      }
      val union = UnionExec(Seq(asBefore, unbucketed))
      union.setTagValue(SplitUnion, ())
      // Adaptive execution replaces the logical node of a materialized stage's plan with the
      // first physical node linked to it: that must be the union, not one of its branches.
      top.logicalLink.foreach(union.setLogicalLink)
      union
    }
  }

  private def isScan(plan: SparkPlan): Boolean =
    plan.isInstanceOf[FileSourceScanExec] || plan.isInstanceOf[RowGroupPiecesScanExec]

  /**
   * `scan` reading only the skewed `buckets` unbucketed: in pieces of rows where the footers were
   * read and cut them into more than one, else split as Spark splits files.
   */
  private def inPieces(
      scan: FileSourceScanExec,
      buckets: Seq[Int],
      skew: SkewedPartitions): SparkPlan = {
    val read = readOnly(scan, buckets, bucketed = false)
    val files = rowGroups(scan).toSeq.flatten
      .filter(f => bucketOf(f.path).exists(b => buckets.contains(b)))
    if (!skew.inRows || files.isEmpty) return read
    val rows = files.map(_.totalRows).sum
    val bytes = math.max(files.map(_.length).sum, 1L)
    def rowsOf(size: Long) = math.ceil(size.toDouble * rows / bytes).toLong
    // The per-slot share, at least minSplitSize and at most the pieces Spark splits files into
    // (spark.sql.files.maxPartitionBytes), in rows. (Not the median bucket: where every bucket
    // is above the share, alike, pieces of the median would cut none of them.)
    val largest = math.min(
      math.max(skew.slotShare, rowsOf(conf.getConf(SkewAggConf.SKEW_MIN_SPLIT_SIZE))),
      math.max(rowsOf(conf.filesMaxPartitionBytes), 1L))
    // As many pieces as pieces of the largest size need, of equal rows.
    val count = math.max(1L, (rows + largest - 1) / largest)
    val pieces = ParquetRowGroups.pieces(files, math.max((rows + count - 1) / count, 1L))
    if (pieces.size < 2) read
    else {
      val inPieces = RowGroupPiecesScanExec(read.asInstanceOf[FileSourceScanExec], pieces)
      scan.logicalLink.foreach(inPieces.setLogicalLink)
      inPieces
    }
  }

  /**
   * The first node below `plan` that is not a sort or a row-local operator: a sort-based partial
   * aggregate reads its scan through a Sort (docs/testing.md, bugs found).
   */
  private def belowSortsAndRowLocal(plan: SparkPlan): SparkPlan = belowRowLocal(plan) match {
    case s: SortExec => belowSortsAndRowLocal(s.child)
    case other => other
  }

  /** Marks the unions this rule made; copies of a node keep its tags. */
  private val SplitUnion = TreeNodeTag[Unit]("skewagg.bucketSplitUnion")

  private def withScan(
      top: SparkPlan,
      scan: FileSourceScanExec,
      replacement: SparkPlan): SparkPlan =
    top.transformUp { case s: FileSourceScanExec if s eq scan => replacement }

  private def numBuckets(scan: FileSourceScanExec): Int = scan.relation.bucketSpec.get.numBuckets

  /** `scan` reading only `buckets`, bucketed (one task per bucket) or split like other files. */
  private def readOnly(
      scan: FileSourceScanExec,
      buckets: Seq[Int],
      bucketed: Boolean): SparkPlan = {
    val set = new BitSet(numBuckets(scan))
    buckets.foreach(set.set)
    val read = scan.copy(optionalBucketSet = Some(set), disableBucketedScan = !bucketed)
    scan.logicalLink.foreach(read.setLogicalLink)
    read
  }

  /** The buckets `scan` reads (after bucket pruning). */
  private def selectedBuckets(scan: FileSourceScanExec): Seq[Int] =
    (0 until numBuckets(scan)).filter(b => scan.optionalBucketSet.forall(_.get(b)))

  /**
   * A chain of single-child aggregates, sorts and row-local operators ending in a bucketed file
   * scan: the scan and the chain's aggregates.
   */
  private object AggregatesOverBucketedScan {
    def unapply(plan: SparkPlan): Option[(FileSourceScanExec, Seq[BaseAggregateExec])] =
      plan match {
        case s: FileSourceScanExec if s.bucketedScan => Some((s, Nil))
        case a: BaseAggregateExec => unapply(a.child).map { case (s, aggs) => (s, a +: aggs) }
        case s: SortExec => unapply(s.child)
        case p if belowRowLocal(p) ne p => unapply(belowRowLocal(p))
        case _ => None
      }
  }

  /**
   * How skewed the tasks of the bucketed scan are, with the sizes measured (rows where the
   * footers were read, else bytes) and the bytes held against the floor (the rows at the
   * average bytes per row, else the bytes), each task holding its buckets as Spark groups files
   * into buckets.
   */
  private def measure(scan: FileSourceScanExec): (SkewedPartitions, Array[Long], Array[Long]) = {
    val tasks = scan.optionalNumCoalescedBuckets.getOrElse(numBuckets(scan))
    def perTask(sizes: Seq[(String, Long)]): Array[Long] = {
      val total = new Array[Long](tasks)
      for ((path, size) <- sizes; bucket <- bucketOf(path)) total(bucket % tasks) += size
      total
    }
    val files = selectedFiles(scan)
    val bytes = perTask(files.map(f => (f.toPath.toString, f.length)))
    rowGroups(scan) match {
      case Some(groups) =>
        val rows = perTask(groups.map(g => (g.path, g.totalRows)))
        val atFloor = SkewedPartitions.atAverageDensity(rows, bytes)
        (SkewedPartitions.findByRows(rows, conf, atFloor), rows, atFloor)
      case None => (SkewedPartitions.find(bytes, conf), bytes, bytes)
    }
  }

  /** The bucket a file of a bucketed table holds, from its name. */
  private def bucketOf(path: String): Option[Int] =
    BucketingUtils.getBucketId(new org.apache.hadoop.fs.Path(path).getName)

  /** The files of the buckets `scan` reads. */
  private def selectedFiles(scan: FileSourceScanExec) =
    ScanFiles.selected(scan).filter { file =>
      bucketOf(file.toPath.toString).exists(b => scan.optionalBucketSet.forall(_.get(b)))
    }

  /**
   * The row groups of the files `scan` reads, from their Parquet footers (read once per scan
   * node), or None: not Parquet, more files than `spark.skewagg.bucketed.maxFootersRead`, or a
   * footer that could not be read.
   */
  private def rowGroups(scan: FileSourceScanExec): Option[Seq[FileRowGroups]] =
    scan.getTagValue(RowGroups).getOrElse {
      val files = selectedFiles(scan)
      val groups =
        if (!scan.relation.fileFormat.isInstanceOf[ParquetFileFormat] ||
          files.size > conf.getConf(SkewAggConf.BUCKETED_MAX_FOOTERS)) None
        else ParquetRowGroups.read(
          files,
          session.sessionState.newHadoopConfWithOptions(scan.relation.options))
      scan.setTagValue(RowGroups, groups)
      groups
    }

  private val RowGroups = TreeNodeTag[Option[Seq[FileRowGroups]]]("skewagg.bucketRowGroups")
}

object SplitSkewedBucketsBelowAggregate {

  /** The rewrite's name in its records (`SkewAggDecision.Rewritten` and `Refused`). */
  val Rewrite = "skewed buckets read unbucketed"
}
