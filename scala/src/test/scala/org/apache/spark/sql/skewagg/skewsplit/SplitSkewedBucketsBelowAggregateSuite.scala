package org.apache.spark.sql.skewagg.skewsplit

import org.scalatest.BeforeAndAfterAll

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan, UnionExec}
import org.apache.spark.sql.execution.aggregate.SortAggregateExec
import org.apache.spark.sql.execution.exchange.ShuffleExchangeLike
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  CheapExchanges, Differential, EveryBuild, SkewAggConf, RecordedDecisions, SkewAggLocalStageExec,
  SkewAggSuiteBase, SpreadOverBuilds
}
import org.apache.spark.sql.skewagg.SkewAggDecision.{NotSkewed, SwitchedOff}
import org.apache.spark.util.collection.BitSet

import org.apache.spark.sql.skewagg.SkewTestData._

class SplitSkewedBucketsBelowAggregateSuite extends SkewAggSuiteBase with SpreadOverBuilds
    with BeforeAndAfterAll {
  private val Buckets = 16

  override def beforeAll(): Unit = {
    super.beforeAll()
    for (skewed <- Seq(true, false)) {
      val name = if (skewed) "bucketed_skewed" else "bucketed_uniform"
      spark.sql(s"DROP TABLE IF EXISTS $name")
      fact(spark, skewed).write.bucketBy(Buckets, "k").format("parquet").saveAsTable(name)
    }
    // Row groups of a few hundred rows: the hot bucket's file holds many.
    spark.sql("DROP TABLE IF EXISTS bucketed_row_groups")
    fact(spark, skewed = true).write.option("parquet.block.size", "2048")
      .bucketBy(Buckets, "k").format("parquet").saveAsTable("bucketed_row_groups")
  }

  override def afterAll(): Unit = {
    Seq("bucketed_skewed", "bucketed_uniform", "bucketed_row_groups")
      .foreach(t => spark.sql(s"DROP TABLE IF EXISTS $t"))
    super.afterAll()
  }

  // In bytes the hot bucket is about 4x the median (its constant key compresses well).
  // Planned for as many slots as buckets: each of the other buckets is about an even share, the
  // hot one (30% of the rows) 4.8x it. (On 64 slots every bucket would be 4x the share.)
  private val bucketConf = conf ++ Seq(
    SQLConf.BUCKETING_ENABLED.key -> "true",
    SkewAggConf.SKEW_FACTOR.key -> "3",
    SkewAggConf.SKEW_TASK_SLOTS.key -> "16")

  private def bucketedScans(d: Differential, on: Boolean, adaptive: Boolean): Int =
    nodes[FileSourceScanExec](d.plan(on, adaptive)).count(_.bucketedScan)

  private def bucketsIn(set: BitSet): Seq[Int] = (0 until Buckets).filter(set.get)

  /** The buckets each scan reads unbucketed (None: all of them), in pieces of rows or not. */
  private def unbucketedReads(d: Differential, adaptive: Boolean): Seq[Option[Seq[Int]]] = {
    val plan = d.plan(on = true, adaptive)
    (nodes[FileSourceScanExec](plan) ++ nodes[RowGroupPiecesScanExec](plan).map(_.scan))
      .filterNot(_.bucketedScan).map(_.optionalBucketSet.map(bucketsIn))
  }

  private def notSkewed(d: Differential, adaptive: Boolean): Seq[NotSkewed] =
    nodes[SparkPlan](d.plan(on = true, adaptive)).flatMap(RecordedDecisions.of).collect {
      case n: NotSkewed => n
    }

  private def cheapExchanges(d: Differential, on: Boolean, adaptive: Boolean): Int =
    nodes[ShuffleExchangeLike](d.plan(on, adaptive)).count(CheapExchanges.isCheapExchange)

  /** The rows of the skewed table's hot bucket. */
  private lazy val hotBucketRows: Long = spark.table("bucketed_skewed")
    .where(pmod(hash(col("k")), lit(Buckets)) === hotBucket).count()

  /** The bucket holding key 0, the hot key of the skewed table. */
  private lazy val hotBucket: Int = spark.range(1).select(
    pmod(hash(lit(0L)), lit(Buckets))).head().getInt(0)

  /**
   * The rewrite: the hot bucket alone is read unbucketed, the other 15 bucketed as before; a
   * union of the two; partials exchanged only above the unbucketed read.
   */
  private def assertHotBucketSplit(d: Differential): Unit = for (adaptive <- Seq(false, true)) {
    val plan = d.plan(on = true, adaptive)
    assert(bucketedScans(d, on = false, adaptive) == 1)
    assert(unbucketedReads(d, adaptive) == Seq(Some(Seq(hotBucket))), plan)
    val Seq(bucketed) = nodes[FileSourceScanExec](plan).filter(_.bucketedScan)
    assert(
      bucketed.optionalBucketSet.map(bucketsIn) ==
        Some((0 until Buckets).filterNot(_ == hotBucket)),
      plan)
    assert(nodes[UnionExec](plan).size == 1, plan)
    assert(cheapExchanges(d, on = true, adaptive) > cheapExchanges(d, on = false, adaptive))
  }

  test("skewed buckets: only the hot bucket is read unbucketed and its partials exchanged") {
    assertHotBucketSplit(differential(
      s =>
        s.table("bucketed_skewed").groupBy("k")
          .agg(sum("v"), count(lit(1)), avg("d"), countDistinct("i")),
      bucketConf: _*))
  }

  test("sort-based aggregates: the hot bucket split, marked, and split once (fuzz seed 1, 135)") {
    // max of a string: no hash aggregate buffer, so Spark plans SortAggregate, whose partial
    // half reads the scan through a Sort. Factor 1.0: measured alone, the buckets that are not
    // skewed look skewed again, and must not be split a second time.
    val d = differential(
      s =>
        s.table("bucketed_skewed").groupBy("k")
          .agg(max(col("i").cast("string")), count(lit(1))),
      bucketConf :+ (SkewAggConf.SKEW_FACTOR.key -> "1.0"): _*)
    for (adaptive <- Seq(false, true)) {
      val plan = d.plan(on = true, adaptive)
      assert(nodes[SortAggregateExec](plan).nonEmpty, plan)
      assert(nodes[UnionExec](plan).size == 1, plan)
      assert(
        nodes[SkewAggLocalStageExec](plan).map(_.rewrite.what)
          .exists(_.startsWith("skewed buckets read unbucketed")),
        plan)
    }
  }

  test("grouping by the bucket key and another column, with a filter") {
    assertHotBucketSplit(differential(
      s =>
        s.table("bucketed_skewed").where(col("i") =!= 2)
          .groupBy("k", "i").agg(sum("v")),
      bucketConf: _*))
  }

  test("a global aggregate above: the union feeds its existing exchange") {
    val d = differential(
      s =>
        s.table("bucketed_skewed").groupBy("k").agg(sum("v").as("s"))
          .agg(count(lit(1)), sum("s")),
      bucketConf: _*)
    for (adaptive <- Seq(false, true)) {
      assert(unbucketedReads(d, adaptive) == Seq(Some(Seq(hotBucket))), d.plan(on = true, adaptive))
      assert(nodes[UnionExec](d.plan(on = true, adaptive)).size == 1)
    }
  }

  test("a second aggregate on the bucket key above: only the lower one is split") {
    // Both rely on the bucketing; the union holds only the lower one's operators, and the upper
    // one gets an exchange of its own partials.
    val d = differential(
      s =>
        s.table("bucketed_skewed").groupBy("k").agg(sum("v").as("s"))
          .groupBy("k").agg(max("s")),
      bucketConf: _*)
    for (adaptive <- Seq(false, true)) {
      assert(unbucketedReads(d, adaptive) == Seq(Some(Seq(hotBucket))), d.plan(on = true, adaptive))
      assert(cheapExchanges(d, on = true, adaptive) == 2)
    }
  }

  test("bucket pruning: the rewrite reads only the selected buckets", EveryBuild) {
    val d = differential(
      s =>
        s.table("bucketed_skewed").where(col("k").isin(0L, 1L, 2L, 3L))
          .groupBy("k").agg(sum("v")),
      bucketConf: _*)
    for (adaptive <- Seq(false, true)) {
      val scans = nodes[FileSourceScanExec](d.plan(on = true, adaptive))
      val pruned =
        nodes[FileSourceScanExec](d.plan(on = false, adaptive)).head.optionalBucketSet.get
      assert(
        scans.forall(_.optionalBucketSet.forall(bucketsIn(_).forall(pruned.get))),
        d.plan(on = true, adaptive))
    }
  }

  test("the SKEW_AGG hint without skew: every bucket is read unbucketed, no union") {
    val d = differential(
      s =>
        s.table("bucketed_uniform").groupBy("k").agg(sum("v"))
          .hint("skew_agg"),
      bucketConf: _*)
    for (adaptive <- Seq(false, true)) {
      assert(unbucketedReads(d, adaptive).size == 1, d.plan(on = true, adaptive))
      assert(bucketedScans(d, on = true, adaptive) == 0)
      assert(nodes[UnionExec](d.plan(on = true, adaptive)).isEmpty)
    }
  }

  test("left alone: the aggregate's bucketed partitioning feeds a join") {
    // The join on k reuses both sides' bucketing; a union would not keep it.
    val d = differential(
      s =>
        s.table("bucketed_skewed").groupBy("k").agg(sum("v").as("s"))
          .join(s.table("bucketed_uniform").groupBy("k").agg(max("i").as("m")), "k"),
      bucketConf: _*)
    for (adaptive <- Seq(false, true)) {
      assert(nodes[UnionExec](d.plan(on = true, adaptive)).isEmpty, d.plan(on = true, adaptive))
    }
  }

  test("uniform buckets: the bucketed plan is kept") {
    val d = differential(
      s => s.table("bucketed_uniform").groupBy("k").agg(sum("v")),
      bucketConf: _*)
    for (adaptive <- Seq(false, true)) {
      assert(bucketedScans(d, on = true, adaptive) == 1)
      assert(shape(d.plan(on = true, adaptive)) == shape(d.plan(on = false, adaptive)))
      // Measured in rows from the footers, recorded for the explanation.
      assert(
        notSkewed(d, adaptive).exists(n =>
          n.inRows && n.text.contains("not more than 3.0x the per-slot share")),
        notSkewed(d, adaptive))
    }
  }

  test("left alone below spark.skewagg.skew.minPartitionSize") {
    val d = differential(
      s => s.table("bucketed_skewed").groupBy("k").agg(sum("v")),
      bucketConf :+ (SkewAggConf.SKEW_MIN_PARTITION_SIZE.key -> "1g"): _*)
    for (adaptive <- Seq(false, true)) {
      assert(bucketedScans(d, on = true, adaptive) == 1)
      assert(nodes[UnionExec](d.plan(on = true, adaptive)).isEmpty)
    }
  }

  test("left alone when spark.skewagg.bucketed.enabled is false") {
    val d = differential(
      s => s.table("bucketed_skewed").groupBy("k").agg(sum("v")),
      bucketConf :+ (SkewAggConf.BUCKETED_ENABLED.key -> "false"): _*)
    for (adaptive <- Seq(false, true)) {
      assert(bucketedScans(d, on = true, adaptive) == 1)
      // Recorded where the rule would have split, for the explanation.
      val recorded = nodes[SparkPlan](d.plan(on = true, adaptive)).flatMap(RecordedDecisions.of)
      assert(
        recorded.contains(SwitchedOff(
          "no split read of the skewed buckets",
          SkewAggConf.BUCKETED_ENABLED)),
        recorded)
    }
  }

  test("task slots: the hot bucket split when planned for 16 slots, left alone on 2") {
    val query = (s: SparkSession) => s.table("bucketed_skewed").groupBy("k").agg(sum("v"))
    assertHotBucketSplit(differential(
      query,
      bucketConf :+ (SkewAggConf.SKEW_TASK_SLOTS.key -> "16"): _*))
    val onTwo = differential(query, bucketConf :+ (SkewAggConf.SKEW_TASK_SLOTS.key -> "2"): _*)
    for (adaptive <- Seq(false, true)) {
      assert(unbucketedReads(onTwo, adaptive).isEmpty, onTwo.plan(on = true, adaptive))
      assert(bucketedScans(onTwo, on = true, adaptive) == 1)
      assert(
        notSkewed(onTwo, adaptive).exists(_.text.contains(
          "rows on 2 task slots (spark.skewagg.skew.taskSlots)")),
        notSkewed(onTwo, adaptive))
    }
  }

  test("rows from the footers: a bucket skewed by rows where its bytes are not") {
    // In rows the hot bucket is 30% of the stage, 4.8x the per-slot share on 16 slots; in bytes
    // about 4x the median (one row group per file), some 3.4x the share: factor 4 splits it only
    // when the footers are read.
    val query = (s: SparkSession) => s.table("bucketed_skewed").groupBy("k").agg(sum("v"))
    val byRows = bucketConf :+ (SkewAggConf.SKEW_FACTOR.key -> "4")
    assertHotBucketSplit(differential(query, byRows: _*))
    val byBytes = differential(query, byRows :+ (SkewAggConf.BUCKETED_MAX_FOOTERS.key -> "0"): _*)
    for (adaptive <- Seq(false, true)) {
      assert(unbucketedReads(byBytes, adaptive).isEmpty, byBytes.plan(on = true, adaptive))
      assert(bucketedScans(byBytes, on = true, adaptive) == 1)
    }
  }

  test("rows from the footers: the hot bucket read in pieces of about equal rows") {
    val d = differential(
      s => s.table("bucketed_row_groups").groupBy("k").agg(sum("v")),
      bucketConf: _*)
    assertHotBucketSplit(d)
    for (adaptive <- Seq(false, true)) {
      val plan = d.plan(on = true, adaptive)
      val Seq(read) = nodes[RowGroupPiecesScanExec](plan)
      // Pieces of about the median bucket's rows (875 of 20,000 rows in 16 buckets), cut at row
      // groups of a few hundred rows: every row of the hot bucket's file is read once.
      assert(read.pieces.size >= 4, plan)
      assert(read.pieces.map(_.rows).sum == hotBucketRows, plan)
      assert(read.pieces.forall(p => p.rows >= 600 && p.rows <= 1400), read.pieces)
      assert(
        nodes[SkewAggLocalStageExec](plan).map(_.rewrite.what).exists(r =>
          r.contains("rows, ") && r.contains(s"read in ${read.pieces.size} pieces of about")),
        plan)
    }
  }

  test("rows from the footers: several files per bucket, read as rows and as batches") {
    // Four files per bucket (four writing tasks), pieces across them; a filter and a second
    // grouping column; the vectorized reader (batches) and the row reader, codegen on and off.
    spark.sql("DROP TABLE IF EXISTS bucketed_four_files")
    try {
      fact(spark, skewed = true).repartition(4).write.option("parquet.block.size", "2048")
        .bucketBy(Buckets, "k").format("parquet").saveAsTable("bucketed_four_files")
      for ((vectorized, codegen) <- Seq(("true", "true"), ("false", "false"))) {
        val d = differential(
          s =>
            s.table("bucketed_four_files").where(col("i") =!= 3).groupBy("k", "i")
              .agg(sum("v"), count(lit(1)), max("d")),
          bucketConf ++ Seq(
            SkewAggConf.SKEW_FACTOR.key -> "4",
            SQLConf.PARQUET_VECTORIZED_READER_ENABLED.key -> vectorized,
            SQLConf.WHOLESTAGE_CODEGEN_ENABLED.key -> codegen): _*)
        for (adaptive <- Seq(false, true)) {
          val plan = d.plan(on = true, adaptive)
          assert(unbucketedReads(d, adaptive) == Seq(Some(Seq(hotBucket))), plan)
          val Seq(read) = nodes[RowGroupPiecesScanExec](plan)
          assert(read.pieces.flatMap(_.ranges.map(_.path)).distinct.size == 4, read.pieces)
          assert(read.supportsColumnar == vectorized.toBoolean, plan)
        }
      }
    } finally spark.sql("DROP TABLE IF EXISTS bucketed_four_files")
  }

  test("pieces of row groups: each file's bytes once, cut at row group starts") {
    val a = FileRowGroups("a", 1000L, Array(4L, 300L, 700L), Array(10L, 10L, 10L))
    val b = FileRowGroups("b", 500L, Array(4L, 250L), Array(25L, 5L))
    val empty = FileRowGroups("e", 50L, Array.empty, Array.empty)
    val pieces = ParquetRowGroups.pieces(Seq(a, empty, b), pieceRows = 15L)
    // Middle rows 5, 15, 25 (a), 42 and 57 (b): pieces 0, 1, 1, 2, 3.
    assert(pieces.map(_.rows) == Seq(10L, 20L, 25L, 5L))
    assert(pieces.map(_.ranges) == Seq(
      Seq(FileRange("a", 0L, 300L)),
      Seq(FileRange("a", 300L, 700L), FileRange("e", 0L, 50L)),
      Seq(FileRange("b", 0L, 250L)),
      Seq(FileRange("b", 250L, 250L))))
    // One piece when the rows never reach the size; whole files when there are no row groups.
    assert(ParquetRowGroups.pieces(Seq(a, b), 1000L).map(_.ranges) == Seq(
      Seq(FileRange("a", 0L, 1000L), FileRange("b", 0L, 500L))))
    assert(ParquetRowGroups.pieces(Seq(empty), 1L).map(_.ranges) ==
      Seq(Seq(FileRange("e", 0L, 50L))))
  }
}
