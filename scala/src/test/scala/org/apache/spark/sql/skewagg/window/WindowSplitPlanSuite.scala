package org.apache.spark.sql.skewagg.window

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.expressions.{Literal, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.{
  CoalescedPartitionSpec, PartialReducerPartitionSpec, ShufflePartitionSpec
}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{AveragedBlockSizes, SkewTestVectors}
import org.apache.spark.sql.skewagg.hotkey.{HotKeyRange, HotKeyRanges}

/**
 * [[WindowSplitPlan]], the window split as a value: sizes, specs and settings in; pieces, sample,
 * routings, tasks and the description out, or the reason the window runs as Spark's. No
 * session: every input is made here.
 */
class WindowSplitPlanSuite extends AnyFunSuite {

  private val MiB = 1L << 20

  private def conf(settings: (String, String)*): SQLConf = {
    val c = new SQLConf
    c.setConfString("spark.skewagg.skew.minPartitionSize", "1MB")
    c.setConfString("spark.skewagg.skew.minSplitSize", "1MB")
    settings.foreach { case (k, v) => c.setConfString(k, v) }
    c
  }

  private def settings(
      c: SQLConf = conf(),
      slots: Int = 64,
      forced: Boolean = false,
      global: Boolean = false,
      inPlace: Boolean = false,
      averaged: Option[AveragedBlockSizes.Averaged] = None) =
    WindowSplitSettings(c, slots, forced, global, inPlace, averaged)

  /** Reducer sizes, each reducer's bytes spread evenly over `maps` map outputs. */
  private def sizes(byReducer: Long*)(maps: Int): WindowShuffleSizes =
    WindowShuffleSizes(byReducer.toArray, r => Array.fill(maps)(byReducer(r) / maps))

  private def onePerReducer(s: WindowShuffleSizes): Seq[ShufflePartitionSpec] =
    s.byReducer.indices.map(i => CoalescedPartitionSpec(i, i + 1, s.byReducer(i)))

  private def piecesOf(
      s: WindowShuffleSizes,
      set: WindowSplitSettings = settings()): Either[String, WindowPieces] =
    WindowSplitPlan.pieces(s, onePerReducer(s), set)

  test("nothing above the per-slot share: Spark's window, and why (with unseen skew)") {
    // 8 partitions of 4 MiB on 2 slots: none above 5x the share of 16 MiB (on 64 slots, all).
    val even = sizes(Seq.fill(8)(4 * MiB): _*)(maps = 10)
    assert(piecesOf(even, settings(slots = 2)) == Left(WindowSplitPlan.NotSkewed))
    assert(piecesOf(even).toOption.get.skew.skewed.size == 8)
    val averaged = AveragedBlockSizes.Averaged(3000, 2000, 100 * MiB)
    val reason = piecesOf(even, settings(slots = 2, averaged = Some(averaged))).left.toOption.get
    assert(reason.startsWith(WindowSplitPlan.NotSkewed + " (skew unseen: "))
    assert(reason.contains(AveragedBlockSizes.FactorKey))
  }

  test("a hot partition is read in map-output pieces; the others are left as Spark reads them") {
    // 7 partitions of 1 MiB, one of 64 MiB in 16 map outputs of 4 MiB: pieces of 1 MiB floor
    // are one map output each.
    val s = sizes(Seq.fill(7)(MiB) :+ 64 * MiB: _*)(maps = 16)
    val pieces = piecesOf(s).toOption.get
    assert(pieces.skew.skewed.map(_._1) == Seq(7))
    assert(pieces.pieceSize == MiB)
    assert(pieces.pieces.size == 16)
    assert(pieces.pieces.forall {
      case PartialReducerPartitionSpec(7, start, end, size) => end == start + 1 && size == 4 * MiB
      case _ => false
    })
    assert(pieces.ordinary == onePerReducer(s).take(7))
    assert(pieces.slices == 16)
    // Every map output of the hot partition is sampled at the default tenth's floor of one each.
    assert(pieces.sample.map(_._1).toSet.subsetOf(pieces.pieces.toSet))
    assert(pieces.sample.nonEmpty)
  }

  test("a coalesced spec holding a hot reducer reads its other reducers whole") {
    val s = sizes(MiB, 64 * MiB, MiB, MiB)(maps = 4)
    val specs = Seq(CoalescedPartitionSpec(0, 2, 65 * MiB), CoalescedPartitionSpec(2, 4, 2 * MiB))
    val pieces = WindowSplitPlan.pieces(s, specs, settings()).toOption.get
    assert(pieces.pieces.head == CoalescedPartitionSpec(0, 1, MiB))
    assert(pieces.pieces.tail.forall(_.isInstanceOf[PartialReducerPartitionSpec]))
    assert(pieces.ordinary == Seq(CoalescedPartitionSpec(2, 4, 2 * MiB)))
  }

  test("a lost map output reads the hot partition whole, which only the hint asks for") {
    val lost = WindowShuffleSizes(
      Array(MiB, MiB, 64 * MiB),
      r => if (r == 2) Array(32 * MiB, -1L, 32 * MiB) else Array(MiB))
    // Routed whole in one task, the split would take longer than the task it replaces.
    val reason = piecesOf(lost).left.toOption.get
    assert(reason.contains("left to Spark's window: the split would take about "))
    val pieces = piecesOf(lost, settings(forced = true)).toOption.get
    assert(pieces.pieces.take(1) == Seq(CoalescedPartitionSpec(0, 1, MiB)))
    assert(pieces.pieces.contains(CoalescedPartitionSpec(2, 3, 64 * MiB)))
    // (the lost one is not sampled)
    assert(!pieces.sample.map(_._1).exists {
      case PartialReducerPartitionSpec(2, 1, _, _) => true
      case _ => false
    })
  }

  test("a split pays against the stage it replaces, weighed by what its stages cost a byte") {
    val s = sizes(Seq.fill(7)(MiB) :+ 64 * MiB: _*)(maps = 16)
    val cost = piecesOf(s).toOption.get.cost
    assert(cost.slots == 64)
    assert(cost.sparkStage == 64.0 * MiB) // the hot task
    assert(cost.sample == 4.0 * MiB) // one map output
    assert(cost.route == 4.0 * MiB) // one piece
    assert(cost.evaluate == 71.0 * MiB / 64) // the stage's share
    import WindowSplitCost._
    assert(cost.split ==
      SampleWeight * 4 * MiB + RouteWeight * 4 * MiB + EvaluateWeight * 71 * MiB / 64)
    assert(cost.pays)
    assert(cost.describe(b => s"${b / MiB} MiB").startsWith(
      "about 0.18x of Spark's stage of 64 MiB on 64 slots: its sample's longest read 4 MiB, " +
        "routing 4 MiB, splits 1 MiB"))
    // Written by 2 map tasks, the hot partition is sampled and routed in halves: the split
    // would outlast the hot task.
    val halves = sizes(Seq.fill(7)(MiB) :+ 64 * MiB: _*)(maps = 2)
    val reason = piecesOf(halves).left.toOption.get
    assert(reason.startsWith("1 skewed partition(s) of the window's shuffle"))
    assert(reason.contains("left to Spark's window: the split would take about 1."))
  }

  test("without PARTITION BY the one partition is sampled in as many slices as pieces hold it") {
    // One partition of 40 MiB written by 8 map tasks: pieces of the floor would be 40, the map
    // outputs give 8, so the sample plans 40 slices from at least 40 points (every output).
    val one = WindowShuffleSizes(Array(0L, 40 * MiB, 0L), _ => Array.fill(8)(5 * MiB))
    val pieces = piecesOf(one, settings(global = true)).toOption.get
    assert(pieces.pieces.size == 8)
    assert(pieces.slices == 40)
    assert(pieces.sample.map(_._1).toSet == pieces.pieces.toSet)
    // With PARTITION BY, as many slices as pieces.
    assert(piecesOf(one).toOption.get.slices == 8)
  }

  test("a table written by two map tasks is not split: each would be read whole twice") {
    val two = WindowShuffleSizes(Array(40 * MiB), _ => Array(20 * MiB, 20 * MiB))
    val reason = piecesOf(two, settings(global = true)).left.toOption.get
    assert(reason.startsWith("no PARTITION BY: Spark runs the window in one task (40.0 MiB"))
    assert(reason.contains("left to Spark's window: the split would take about 1.22x"))
    assert(piecesOf(two, settings(global = true, forced = true)).isRight)
  }

  test("the SKEW_AGG hint reads every partition that holds rows as skewed") {
    val s = sizes(Seq.fill(4)(4 * MiB) :+ 0L: _*)(maps = 4)
    assert(piecesOf(s, settings(slots = 2)).isLeft)
    val forced = piecesOf(s, settings(slots = 2, forced = true)).toOption.get
    assert(forced.skew.skewed.map(_._1) == Seq(0, 1, 2, 3))
    assert(forced.ordinary == onePerReducer(s).drop(4))
  }

  test("mapRanges cuts map outputs as Spark's skew join does, or leaves them whole") {
    val cut = WindowSplitPlan.mapRanges(3, Array(5L, 5L, 5L, 5L), 10L).get
    assert(cut == Seq(
      PartialReducerPartitionSpec(3, 0, 2, 10L),
      PartialReducerPartitionSpec(3, 2, 4, 10L)))
    assert(WindowSplitPlan.mapRanges(3, Array(5L, 5L), 100L).isEmpty)
    assert(WindowSplitPlan.mapRanges(3, Array(5L, -1L, 5L), 5L).isEmpty)
  }

  private val hotPieces = piecesOf(sizes(Seq.fill(7)(MiB) :+ 64 * MiB: _*)(maps = 16)).toOption.get

  private def key(v: Int): UnsafeRow = UnsafeProjection.create(Seq(Literal(v)))(null).copy()

  private def sampled(hotKeys: Seq[HotKeyRange], ordinaryRows: Double) = Seq(HotKeyRanges(
    hashPartitions = hotPieces.slices,
    hotKeys,
    largestKeyRows = 3e6,
    averagePartitionRows = 1e5,
    totalRows = 1e7,
    ordinaryRows = ordinaryRows))

  test("no hot key in the sample: why none was split, with the partitions found") {
    val reason = WindowSplitPlan.split(hotPieces, sampled(Nil, 1e7), settings())
      .left.toOption.get
    assert(reason.startsWith("1 skewed partition(s) of the window's shuffle"))
    assert(reason.contains("read in 16 pieces (the split takes about 0.18x"))
    assert(reason.contains("; no hot key split"))
  }

  test("a hot key: its splits, the other keys in as many tasks as their rows fill") {
    val bounds = Array(key(10), key(20), key(30))
    val hot = HotKeyRange(key(0), hotPieces.slices, bounds)
    val split = WindowSplitPlan.split(hotPieces, sampled(Seq(hot), 3.5e5), settings())
      .toOption.get
    assert(split.ordinaryTasks == 4) // ceil(3.5e5 / 1e5)
    assert(split.routings.head.hashPartitions == 4)
    assert(split.routings.head.hotKeys.head.firstPartition == 4)
    assert(split.tasks == 4) // the key's 4 splits
    assert(split.description.contains("1 hot key split by order into 4 tasks"))
    assert(split.description.endsWith("; the other keys of those partitions into 4 task(s)"))
    assert(split.description.contains(", read in 16 pieces (the split takes about 0.18x of " +
      "Spark's stage of 64.0 MiB on 64 slots"))
    // In place, the key stays in its pieces: one split, read by the pieces' tasks.
    val inPlace = WindowSplitPlan.split(hotPieces, sampled(Seq(hot), 0), settings(inPlace = true))
      .toOption.get
    assert(inPlace.ordinaryTasks == 1)
    assert(inPlace.routings.head.hotKeys.head.numSplits == 1)
    assert(inPlace.tasks == 16)
    assert(inPlace.description.contains("split by map-output piece (no order) into 16 tasks"))
    // No row of another key in the sample: nothing said of other keys.
    val allHot = WindowSplitPlan.split(hotPieces, sampled(Seq(hot), 0), settings()).toOption.get
    assert(!allHot.description.contains("other keys"), allHot.description)
  }

  test("keys a split cannot compute run Spark's window, each reason said once") {
    val c = conf()
    val all = WindowSplitPlan.splitKeys(
      IndexedSeq(true, true, true),
      IndexedSeq(true, true, true),
      c)
    assert(all == SplitKeys(Seq(0, 1, 2), Nil, None))
    val some = WindowSplitPlan.splitKeys(
      IndexedSeq(true, false, true),
      IndexedSeq(true, true, false),
      c)
    assert(some.split == Seq(0))
    assert(some.spark.toSet == Set(1, 2))
    assert(some.note.get == "1 key(s) in Spark's window: too many rows for a ranking " +
      "function's int; 1 key(s) in Spark's window: bounded RANGE frames reaching more than " +
      s"${c.getConfString("spark.skewagg.window.split.maxRangeFrameRows")} rows across a " +
      "split's edge (spark.skewagg.window.split.maxRangeFrameRows), or bounds that wrap around")
  }

  test("the cost's shared cases (tests/data/skew_test_vectors.json), as the advisor reads them") {
    val cases = SkewTestVectors.list("windowSplitCostCases")
    assert(cases.exists(_.get("pays").asBoolean) && cases.exists(!_.get("pays").asBoolean))
    cases.foreach { c =>
      val name = c.get("name").asText
      val s = sizes(SkewTestVectors.longs(c, "sizes").toSeq: _*)(c.get("maps").asInt)
      val planned = settings(
        SkewTestVectors.confOf(c),
        slots = c.get("slots").asInt,
        global = c.get("global").asBoolean)
      val measured = WindowSplitPlan.measured(s, onePerReducer(s), planned)
      val pieces = measured.toOption.getOrElse(fail(s"$name: $measured"))
      assert(
        pieces.skew.skewed.map(_._1) == SkewTestVectors.ints(c, "skewed"),
        name)
      assert(pieces.cost.pays == c.get("pays").asBoolean, name)
      val cost = pieces.cost
      Seq(
        "sparkStage" -> cost.sparkStage,
        "sample" -> cost.sample,
        "route" -> cost.route,
        "evaluate" -> cost.evaluate,
        "split" -> cost.split).foreach { case (stage, value) =>
        val expected = c.get(stage).asDouble
        assert(math.abs(value - expected) <= 1e-9 * expected, s"$name: $stage $value")
      }
      // Where it does not pay, step 1 says so and why.
      val reason = WindowSplitPlan.pieces(s, onePerReducer(s), planned).left.toOption
      assert(reason.isDefined == !cost.pays, name)
      reason.foreach(r => assert(r.contains(", left to Spark's window: the split would take "), r))
    }
  }
}
