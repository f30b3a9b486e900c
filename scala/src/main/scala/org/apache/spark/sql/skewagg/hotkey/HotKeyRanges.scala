package org.apache.spark.sql.skewagg.hotkey

import scala.collection.mutable.ArrayBuffer
import scala.reflect.ClassTag

import org.apache.spark.RangePartitioner
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute, AttributeReference, BaseOrdering, BoundReference, Expression, Literal, Murmur3Hash,
  Pmod, RowOrdering, SortOrder, UnsafeProjection, UnsafeRow
}
import org.apache.spark.sql.skewagg.SkewAggConf

/**
 * Where each row of a keyed input goes when hot keys are split by order (the routing of the
 * shuffles that split a hot key's rows across tasks: a percentile's values, a window's rows).
 *
 * Partitions `0 until hashPartitions` hold the ordinary keys, by Spark's Murmur3 hash of the key
 * as a hash shuffle places them. After them come the hot keys' splits: hot key `h` owns the
 * partitions `h.firstPartition to h.firstPartition + h.bounds.length`; a row of `h` whose order
 * tuple is `v` goes to the first of them whose upper bound is >= v (the last one has none), in
 * the order's directions and null orderings (`SortOrder`s, compared as SortExec compares them),
 * so tuples equal under that order (-0.0 and 0.0, NaNs, peers of a window) always meet in one
 * split, and the splits of a key, read in partition order, hold its rows in that order: a split's
 * rank offset within its key is the sum of the ranks the splits before it hold.
 *
 * `keys` and `bounds` are binary rows (the keys, normalized as Spark normalizes them; the order
 * tuple): the routing is a pure function of a row, so a retried map task sends every row where
 * the first attempt did.
 */
final case class HotKeyRange(key: UnsafeRow, firstPartition: Int, bounds: Array[UnsafeRow]) {
  def numSplits: Int = bounds.length + 1
  def partitions: Range = firstPartition until firstPartition + numSplits
}

/**
 * The routing, and the sample's estimates it was decided on: the largest key's rows, the rows
 * of an average hash partition, of the whole input and of the keys that are not hot (0 when
 * nothing was sampled), and the task slots and skew factor of the per-slot share test.
 */
final case class HotKeyRanges(
    hashPartitions: Int,
    hotKeys: Seq[HotKeyRange],
    largestKeyRows: Double = 0,
    averagePartitionRows: Double = 0,
    totalRows: Double = 0,
    slots: Int = 1,
    factor: Double = 1.0,
    ordinaryRows: Double = 0) {

  /** The rows of an even share of the input per task slot. */
  def slotShareRows: Double = totalRows / math.max(slots, 1)

  def numPartitions: Int = hashPartitions + hotKeys.map(_.numSplits).sum
  def splitPartitions: Range = hashPartitions until numPartitions
  def numSplits: Int = numPartitions - hashPartitions

  /**
   * "1 hot key split by value into 16 tasks: ...", or why none was; `splitBy` names what the
   * splits are ranges of, `minKeyRowsKey` the setting that gave `minKeyRows`, `tasks` how many
   * tasks read the hot keys; with `wholePartition` (no keys: the input is one key), "the whole
   * partition split by ...".
   */
  def describe(
      splitBy: String,
      minKeyRows: Long,
      minKeyRowsKey: String,
      tasks: Int = numSplits,
      wholePartition: Boolean = false): String = {
    val largest = if (wholePartition) "the partition" else "the largest key"
    val estimate = f"$largest estimated at $largestKeyRows%,.0f rows from a sample"
    val none = if (wholePartition) "not split" else "no hot key split"
    if (hotKeys.nonEmpty) {
      val keys = if (wholePartition) "the whole partition"
      else if (hotKeys.size == 1) "1 hot key"
      else s"${hotKeys.size} hot keys"
      f"$keys split by $splitBy into $tasks tasks ($estimate, an average partition " +
        f"$averagePartitionRows%,.0f rows)"
    } else if (largestKeyRows == 0) {
      s"$none: the sample read no rows"
    } else if (largestKeyRows < minKeyRows) {
      s"$none: $estimate, under $minKeyRowsKey=$minKeyRows"
    } else if (largestKeyRows <= factor * slotShareRows) {
      f"$none: $estimate, not more than ${factor}x the per-slot share " +
        f"$slotShareRows%,.0f rows on $slots task slots (${SkewAggConf.SKEW_TASK_SLOTS.key})"
    } else {
      f"$none: $estimate, an average partition $averagePartitionRows%,.0f rows " +
        "(a key is split when it holds more than one partition's rows)"
    }
  }

  /** The same routing with `partitions` hash partitions (the hot keys' splits after them). */
  def withHashPartitions(partitions: Int): HotKeyRanges = copy(
    hashPartitions = partitions,
    hotKeys = hotKeys.map(hot =>
      hot.copy(firstPartition = hot.firstPartition - hashPartitions + partitions)))

  /** The same hot keys, each in one split. */
  def unsplit: HotKeyRanges = copy(hotKeys = hotKeys.zipWithIndex.map { case (hot, i) =>
    hot.copy(firstPartition = hashPartitions + i, bounds = Array.empty[UnsafeRow])
  })

  /**
   * The partition of each row, built once per task: `keys` and `order` are bound to `input`.
   */
  def router(
      keys: Seq[Expression],
      order: Seq[SortOrder],
      input: Seq[Attribute]): InternalRow => Int = {
    val hash: InternalRow => Int =
      if (hashPartitions == 0) { _ =>
        throw new IllegalStateException("a row of a key that is not hot, and no hash partition")
      } else {
        val hashed = UnsafeProjection.create(
          Seq(Pmod(new Murmur3Hash(keys), Literal(hashPartitions))),
          input)
        row => hashed(row).getInt(0)
      }
    if (hotKeys.isEmpty) {
      hash
    } else {
      val keyOf = UnsafeProjection.create(keys, input)
      val valueOf = UnsafeProjection.create(order.map(_.child), input)
      val ordering = HotKeyRanges.ordering(order)
      val byKey = new java.util.HashMap[UnsafeRow, HotKeyRange]()
      hotKeys.foreach(h => byKey.put(h.key, h))
      row => {
        val hot = byKey.get(keyOf(row))
        if (hot == null) hash(row)
        else if (hot.bounds.isEmpty) hot.firstPartition
        else hot.firstPartition + HotKeyRanges.splitIndex(hot.bounds, valueOf(row), ordering)
      }
    }
  }
}

object HotKeyRanges {

  /** `order` over a row of its values (column i holding `order(i)`'s), as SortExec compares. */
  def ordering(order: Seq[SortOrder]): BaseOrdering = RowOrdering.create(
    order.zipWithIndex.map { case (o, i) =>
      o.copy(child = BoundReference(i, o.dataType, nullable = true))
    },
    Nil)

  /** The first index whose bound is >= `value`, or `bounds.length`. */
  def splitIndex(bounds: Array[UnsafeRow], value: InternalRow, ordering: BaseOrdering): Int = {
    var low = 0
    var high = bounds.length
    while (low < high) {
      val middle = (low + high) >>> 1
      if (ordering.compare(value, bounds(middle)) > 0) low = middle + 1 else high = middle
    }
    low
  }

  /**
   * Samples `input` and picks the hot keys. The sample reads `sampleFraction` of the input's
   * partitions (at least one, evenly spaced; one job), or with `partitionWeights` every
   * partition, each row of partition i standing for `partitionWeights(i)` rows of the whole (the
   * inverse of its chance to be read). It keeps a reservoir of keys and order tuples of
   * up to `sampleSize` rows in all, each partition's reservoir seeded by its index. A key is hot
   * when its estimated rows are at least `minKeyRows` and more than an average one of
   * `hashPartitions` partitions. Each is split into about (its rows / average partition rows)
   * ranges, at most `maxSplits`, with bounds at weighted quantiles of its sampled order tuples
   * (Spark's `RangePartitioner.determineBounds`, less a bound at the largest sampled tuple); a
   * key whose sample gives no bound stays unsplit. Only a key of more than `factor` times the
   * per-slot share (the input's rows / `slots`) is split: below it, the key's task is not longer
   * than an even share of the work on those slots (a `factor` of 0 leaves that test to the
   * caller).
   *
   * One routing per order of `orders` (one order; or a chain of windows on the same keys, each
   * with its own): the same hot keys, each order's own bounds. The first routing has
   * `hashPartitions` partitions for the other keys, the others none (they route only the hot
   * keys' rows); a key is hot when some order gives it a bound, and an order that gives it none
   * leaves it one split there.
   *
   * Estimates only decide where rows go, never a result.
   */
  def sample(
      input: RDD[InternalRow],
      keys: Seq[Expression],
      orders: Seq[Seq[SortOrder]],
      inputAttributes: Seq[Attribute],
      hashPartitions: Int,
      minKeyRows: Long,
      maxSplits: Int,
      sampleSize: Int,
      sampleFraction: Double,
      slots: Int,
      factor: Double,
      partitionWeights: Option[IndexedSeq[Double]] = None): Seq[HotKeyRanges] = {
    def none = orders.indices.map(i => HotKeyRanges(if (i == 0) hashPartitions else 0, Nil))
    val order = orders.flatten
    val inputPartitions = input.getNumPartitions
    if (inputPartitions == 0) return none
    val sampled = if (partitionWeights.isDefined) inputPartitions
    else math.min(inputPartitions, math.max(1, math.ceil(inputPartitions * sampleFraction).toInt))
    val chosen = (0 until sampled).map(i => (i.toLong * inputPartitions / sampled).toInt)
    val weights = chosen.map(i => partitionWeights.fold(inputPartitions.toDouble / sampled)(_(i)))
    val perPartition = math.max(1, math.ceil(sampleSize.toDouble / sampled).toInt)
    val reservoirs = input.mapPartitionsWithIndexInternal { (index, rows) =>
      val project = UnsafeProjection.create(keys ++ order.map(_.child), inputAttributes)
      val random = new java.util.Random(index.toLong * 0x9e3779b97f4a7c15L + 17)
      val kept = new ArrayBuffer[UnsafeRow](perPartition)
      var seen = 0L
      rows.foreach { row =>
        if (seen < perPartition) {
          kept += project(row).copy()
        } else {
          val slot = (random.nextDouble() * (seen + 1)).toLong
          if (slot < perPartition) kept(slot.toInt) = project(row).copy()
        }
        seen += 1
      }
      Iterator((seen, kept.toArray))
    }
    val sketches = input.sparkContext.runJob(
      reservoirs,
      (rows: Iterator[(Long, Array[UnsafeRow])]) => rows.next(),
      chosen)
    // Rows of the whole input, estimated from the partitions read.
    val totalRows = sketches.zip(weights).map { case ((rows, _), w) => rows * w }.sum
    if (totalRows == 0.0) return none

    val keyAttributes =
      keys.zipWithIndex.map { case (k, i) => AttributeReference(s"k$i", k.dataType)() }
    val orderAttributes =
      order.zipWithIndex.map { case (o, i) => AttributeReference(s"o$i", o.dataType)() }
    val sampleAttributes = keyAttributes ++ orderAttributes
    val keyOf = UnsafeProjection.create(keyAttributes, sampleAttributes)
    val valueOf = UnsafeProjection.create(orderAttributes, sampleAttributes)
    // Each order's columns of a sampled order tuple (the orders' columns one after another).
    val starts = orders.scanLeft(0)(_ + _.size)
    val valuesOf = orders.indices.map { i =>
      val slice = orderAttributes.slice(starts(i), starts(i + 1))
      UnsafeProjection.create(slice, orderAttributes)
    }
    val candidates = new java.util.HashMap[UnsafeRow, ArrayBuffer[(UnsafeRow, Float)]]()
    val estimatedRows = new java.util.HashMap[UnsafeRow, java.lang.Double]()
    sketches.zip(weights).foreach { case ((rows, kept), scale) =>
      val weight = if (kept.isEmpty) 0.0 else rows.toDouble / kept.length * scale
      kept.foreach { row =>
        val key = keyOf(row).copy()
        var values = candidates.get(key)
        if (values == null) {
          values = new ArrayBuffer[(UnsafeRow, Float)]()
          candidates.put(key, values)
          estimatedRows.put(key, 0.0)
        }
        values += ((valueOf(row).copy(), weight.toFloat))
        estimatedRows.put(key, estimatedRows.get(key) + weight)
      }
    }

    val averagePartitionRows = totalRows / hashPartitions
    val byOrder = orders.map(o => ordering(o).asInstanceOf[Ordering[UnsafeRow]])
    // Per hot key, its bounds in each order.
    val hot = new ArrayBuffer[(UnsafeRow, Seq[Array[UnsafeRow]])]()
    // Largest first (the order only numbers the split partitions).
    val byEstimate = candidates.keySet().toArray(Array.empty[UnsafeRow])
      .map(k => (k, estimatedRows.get(k).doubleValue)).sortBy(-_._2)
    byEstimate.foreach { case (key, rows) =>
      val splits = math.min(maxSplits.toDouble, math.ceil(rows / averagePartitionRows)).toInt
      if (rows >= minKeyRows && splits >= 2 && rows > factor * totalRows / math.max(slots, 1)) {
        val values = candidates.get(key)
        val bounds = orders.indices.map { i =>
          val sliced = if (orders.size == 1) values
          else values.map { case (v, w) => (valuesOf(i)(v).copy(), w) }
          // A bound at the largest value sampled sends no sampled row above it (every row of
          // the key has one order value, say): no split of its own.
          val largest = sliced.iterator.map(_._1).max(byOrder(i))
          RangePartitioner.determineBounds(sliced, splits)(
            byOrder(i),
            ClassTag(classOf[UnsafeRow])).filter(byOrder(i).lt(_, largest))
        }
        if (bounds.exists(_.nonEmpty)) hot += ((key, bounds))
      }
    }
    val ordinaryRows = totalRows - hot.map(h => estimatedRows.get(h._1).doubleValue).sum
    orders.indices.map { i =>
      val partitions = if (i == 0) hashPartitions else 0
      var next = partitions
      val ranges = hot.toSeq.map { case (key, bounds) =>
        val range = HotKeyRange(key, next, bounds(i))
        next += range.numSplits
        range
      }
      HotKeyRanges(
        partitions,
        ranges,
        byEstimate.headOption.fold(0.0)(_._2),
        averagePartitionRows,
        totalRows,
        slots,
        factor,
        ordinaryRows)
    }
  }
}
