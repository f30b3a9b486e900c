package org.apache.spark.sql.skewagg.singlekey

import org.apache.spark.{ShuffleDependency, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Ascending, Attribute, AttributeSet, BindReferences, Expression, GenericInternalRow,
  NamedExpression, SortOrder, UnsafeProjection, UnsafeRow
}
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, Final, Partial}
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.catalyst.util.truncatedString
import org.apache.spark.sql.execution.{
  CoalescedPartitionSpec, ShuffledRowRDD, SortExec, SparkPlan, SQLExecution, UnaryExecNode
}
import org.apache.spark.sql.execution.metric.{
  SQLMetric, SQLMetrics, SQLShuffleReadMetricsReporter, SQLShuffleWriteMetricsReporter
}
import org.apache.spark.sql.skewagg.{SkewAggAggregateExec, SkewAggConf, TaskSlots}
import org.apache.spark.sql.skewagg.hotkey.{ExternalSorts, HotKeyRanges, RoutingShuffle}

/**
 * [[SingleKeyAggregateExec]] whose hot keys are split by value across several tasks, so that the
 * exact percentiles of one key are computed in parallel.
 *
 * Plan shape: planned by [[PlanHolisticAggregatesSortBased]] in place of SingleKeyAggregate
 * (and its hash shuffle and sort) when every holistic function is a [[SortedRunPercentile]]
 * without FILTER and every other function has a fixed-size buffer Spark can merge
 * (DeclarativeAggregate: sum, count, avg, min, max, ...). Its child is the projected input; it
 * shuffles that input itself, because where a row goes depends on a sample taken when it runs.
 *
 * Execution (all decisions are functions of the input, so task retries are safe):
 *  1. One job samples part of the input ([[HotKeyRanges.sample]]): hot keys and value bounds.
 *  2. One shuffle of the input: ordinary keys by hash to `spark.sql.shuffle.partitions`
 *     partitions, each hot key by value range to its own split partitions.
 *  3. Ordinary partitions: sorted by (keys, value) and aggregated one key at a time, exactly as
 *     SingleKeyAggregate does.
 *  4. Hot keys (only when there are any): a job reads every split once and returns, per
 *     percentile function, how many ranks the split holds (its non-null values, or the sum of
 *     their frequencies), and the partial buffer (Spark's Partial mode) of the other functions.
 *     The driver adds the counts up: each split's rank offset within its key, each key's total,
 *     so the ranks each percentile needs and the split holding each (the two ranks of an
 *     interpolation can lie in two adjacent splits). A second job runs only on the splits that
 *     hold a needed rank: each sorts its rows by value and returns the values at its ranks. One
 *     task then merges each hot key's pieces into its row: the percentiles with Spark's
 *     arithmetic ([[SortedRunPercentile.resultFrom]]), the other functions in Final mode.
 * Refuses nothing at run time: when the sample finds no hot key it is a SingleKeyAggregate whose
 * input was partly read twice (the sampled partitions).
 *
 * Metrics: keys processed, rows read, percentile buffer spill size, hot keys split, splits, and
 * percentiles interpolated between two splits.
 */
case class HotKeySplitAggregateExec(
    groupingAttributes: Seq[Attribute],
    aggregateExpressions: Seq[AggregateExpression],
    aggregateAttributes: Seq[Attribute],
    resultExpressions: Seq[NamedExpression],
    sortValue: Expression,
    child: SparkPlan)
    extends UnaryExecNode with SkewAggAggregateExec {

  override def output: Seq[Attribute] = resultExpressions.map(_.toAttribute)
  override def producedAttributes: AttributeSet = AttributeSet(aggregateAttributes)

  private lazy val readMetrics =
    SQLShuffleReadMetricsReporter.createShuffleReadMetrics(sparkContext)
  private lazy val writeMetrics =
    SQLShuffleWriteMetricsReporter.createShuffleWriteMetrics(sparkContext)

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "keys processed"),
    "numInputRows" -> SQLMetrics.createMetric(sparkContext, "rows read"),
    "spillSize" -> SQLMetrics.createSizeMetric(sparkContext, "key buffer spill size"),
    "sortSpillSize" -> SQLMetrics.createSizeMetric(sparkContext, "sort spill size"),
    "hotKeys" -> SQLMetrics.createMetric(sparkContext, "number of hot keys split"),
    "splits" -> SQLMetrics.createMetric(sparkContext, "number of splits"),
    "dataSize" -> SQLMetrics.createSizeMetric(sparkContext, "data size"),
    "splitInterpolations" -> SQLMetrics.createMetric(
      sparkContext,
      "percentiles interpolated between two splits")) ++ readMetrics ++ writeMetrics

  override def nodeName: String = "HotKeySplitAggregate"

  override def decision: String =
    SingleKeyAggregateExec.describe(
      nodeName,
      longMetric("numInputRows"),
      longMetric("numOutputRows")) +
      getTagValue(HotKeySplitAggregateExec.Split).fold("")("; " + _)

  override def simpleString(maxFields: Int): String = {
    val keys = truncatedString(groupingAttributes, "[", ", ", "]", maxFields)
    val functions = truncatedString(aggregateExpressions, "[", ", ", "]", maxFields)
    s"$nodeName(key=$keys, functions=$functions, sortedBy=${sortValue.sql}, " +
      "hotKeys=splitByValue)"
  }

  /** (function, its index in aggregateExpressions), for the percentile functions. */
  private def percentiles: Seq[(SortedRunPercentile, Int)] =
    aggregateExpressions.zipWithIndex.collect {
      case (AggregateExpression(p: SortedRunPercentile, _, _, _, _), i) => (p, i)
    }

  /** The other functions: merged from per-split partial buffers for hot keys. */
  private def others: Seq[(AggregateExpression, Int)] =
    aggregateExpressions.zipWithIndex.filterNot(
      _._1.aggregateFunction.isInstanceOf[SortedRunPercentile])

  override protected def doExecute(): RDD[InternalRow] = {
    val input = child.execute()
    val ranges = HotKeyRanges.sample(
      input,
      groupingAttributes,
      Seq(Seq(SortOrder(sortValue, Ascending))),
      child.output,
      conf.numShufflePartitions,
      conf.getConf(SkewAggConf.SINGLE_KEY_SPLIT_MIN_KEY_ROWS),
      conf.getConf(SkewAggConf.SINGLE_KEY_SPLIT_MAX_SPLITS),
      conf.getConf(SkewAggConf.SINGLE_KEY_SPLIT_SAMPLE_SIZE),
      conf.getConf(SkewAggConf.SINGLE_KEY_SPLIT_SAMPLE_FRACTION),
      TaskSlots.of(conf),
      conf.getConf(SkewAggConf.SKEW_FACTOR)).head
    setTagValue(
      HotKeySplitAggregateExec.Split,
      ranges.describe(
        "value",
        conf.getConf(SkewAggConf.SINGLE_KEY_SPLIT_MIN_KEY_ROWS),
        SkewAggConf.SINGLE_KEY_SPLIT_MIN_KEY_ROWS.key))
    longMetric("hotKeys").set(ranges.hotKeys.size.toLong)
    longMetric("splits").set(ranges.numSplits.toLong)

    val dependency = shuffleDependency(input, ranges)
    val ordinaryPartitions = new ShuffledRowRDD(
      dependency,
      readMetrics,
      Array.tabulate(ranges.hashPartitions)(i => CoalescedPartitionSpec(i, i + 1)))
    val ordinaryRows = aggregateOrdinaryKeys(ordinaryPartitions)
    val result = if (ranges.hotKeys.isEmpty) ordinaryRows
    else {
      val allPartitions = new ShuffledRowRDD(dependency, readMetrics)
      sparkContext.union(ordinaryRows, aggregateHotKeys(allPartitions, ranges))
    }
    SQLMetrics.postDriverMetricUpdates(
      sparkContext,
      sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY),
      Seq("hotKeys", "splits", "splitInterpolations").map(longMetric))
    result
  }

  /** The input shuffled by [[HotKeyRanges.router]]. */
  private def shuffleDependency(
      input: RDD[InternalRow],
      ranges: HotKeyRanges): ShuffleDependency[Int, InternalRow, InternalRow] = {
    val keys = groupingAttributes
    val order = Seq(SortOrder(sortValue, Ascending))
    val inputAttributes = child.output
    val withPartitionIds = input.mapPartitionsWithIndexInternal { (_, rows) =>
      RoutingShuffle.routed(
        rows,
        ranges.router(keys, order, inputAttributes),
        ranges.numPartitions)
    }
    RoutingShuffle.dependency(
      withPartitionIds,
      ranges.numPartitions,
      inputAttributes.size,
      longMetric("dataSize"),
      writeMetrics)
  }

  /** Ordinary keys: sorted by (keys, value), then one key at a time, as SingleKeyAggregate. */
  private def aggregateOrdinaryKeys(partitions: RDD[InternalRow]): RDD[InternalRow] = {
    val keys = longMetric("numOutputRows")
    val rowsRead = longMetric("numInputRows")
    val sortSpill = longMetric("sortSpillSize")
    val functions =
      SingleKeyAggregateExec.withSpillMetric(aggregateExpressions, longMetric("spillSize"))
    val inputAttributes = child.output
    val byKeyAndValue = sortBy(groupingAttributes :+ sortValue)
    val grouping = groupingAttributes
    val attributes = aggregateAttributes
    val results = resultExpressions
    partitions.mapPartitionsWithIndexInternal { (partIndex, input) =>
      if (!input.hasNext) Iterator.empty
      else {
        val sorted = ExternalSorts.sort(
          input.map { row => rowsRead += 1; row },
          byKeyAndValue,
          sortSpill)
        SingleKeyAggregateExec.aggregateSorted(
          partIndex,
          sorted,
          grouping,
          inputAttributes,
          functions,
          attributes,
          results,
          keys)
      }
    }
  }

  /** Spark's sort of this operator's input by `expressions`, ascending (its sorter is used). */
  private def sortBy(expressions: Seq[Expression]): SortExec =
    SortExec(expressions.map(SortOrder(_, Ascending)), global = false, child = child)

  /**
   * Hot keys: a job reading every split (ranks held, partial buffers of the other functions), a
   * job over the splits that hold a wanted rank (sorted, values at those ranks), and an RDD of one
   * task that merges each key's pieces.
   */
  private def aggregateHotKeys(
      shuffled: RDD[InternalRow],
      ranges: HotKeyRanges): RDD[InternalRow] = {
    val inputAttributes = child.output
    val boundPercentiles = percentiles.map { case (p, _) =>
      BindReferences.bindReference(p, inputAttributes)
    }
    val splitIds = ranges.splitPartitions
    val firstSplit = splitIds.head
    val grouping = groupingAttributes
    val partial = others.map(_._1.copy(mode = Partial))
    val rowsRead = longMetric("numInputRows")
    val sortSpill = longMetric("sortSpillSize")

    // Per split: the ranks it holds per percentile function, and the others' partial buffer.
    val counts: Array[SplitCount] = sparkContext.runJob(
      shuffled,
      (context: TaskContext, rows: Iterator[InternalRow]) => {
        val held = new Array[Long](boundPercentiles.size)
        var read = 0L
        val counted = rows.map { row =>
          read += 1
          var j = 0
          while (j < held.length) { held(j) += boundPercentiles(j).weight(row); j += 1 }
          row
        }
        val buffer = if (partial.isEmpty || !counted.hasNext) None
        else {
          val aggregated = SortAggregationIterators.create(
            context.partitionId(),
            grouping,
            inputAttributes,
            counted,
            partial,
            partial.flatMap(_.aggregateFunction.aggBufferAttributes),
            0,
            grouping ++ partial.flatMap(_.aggregateFunction.inputAggBufferAttributes),
            new SQLMetric("sum"))
          Some(aggregated.next().copy())
        }
        counted.foreach(_ => ()) // (a split holds one key: the aggregation read it all already)
        rowsRead += read
        SplitCount(read, held, buffer)
      },
      splitIds)

    // Per split and function: the ascending ranks within the split that the results need.
    val localRanks: Array[Array[Array[Long]]] =
      Array.fill(splitIds.size, boundPercentiles.size)(Array.empty[Long])
    var interpolations = 0L
    ranges.hotKeys.foreach { hot =>
      val splitsOfKey = hot.partitions.map(_ - firstSplit)
      boundPercentiles.indices.foreach { j =>
        val ranks = SplitRanks(splitsOfKey.map(s => counts(s).held(j)))
        ranks.localRanks(boundPercentiles(j).ranksNeeded(ranks.total).toSeq).zipWithIndex
          .foreach { case (local, i) => localRanks(splitsOfKey(i))(j) = local }
        interpolations += ranks.straddling(boundPercentiles(j).rankPairs(ranks.total))
      }
    }
    longMetric("splitInterpolations").set(interpolations)

    // The values at those ranks: only the splits holding one sort their rows.
    val byValue = sortBy(Seq(sortValue))
    val picking = splitIds.filter(p => localRanks(p - firstSplit).exists(_.nonEmpty))
    val picked: Map[Int, Array[Array[AnyRef]]] = picking.map(_ - firstSplit).zip(
      sparkContext.runJob(
        shuffled,
        (context: TaskContext, rows: Iterator[InternalRow]) => {
          val wanted = localRanks(context.partitionId() - firstSplit)
          val found = wanted.map(r => new Array[AnyRef](r.length))
          val seen = new Array[Long](wanted.length)
          val next = new Array[Int](wanted.length)
          ExternalSorts.sort(rows, byValue, sortSpill).foreach { row =>
            var j = 0
            while (j < wanted.length) {
              seen(j) += boundPercentiles(j).weight(row)
              while (next(j) < wanted(j).length && wanted(j)(next(j)) < seen(j)) {
                found(j)(next(j)) = InternalRow.copyValue(boundPercentiles(j).child.eval(row))
                  .asInstanceOf[AnyRef]
                next(j) += 1
              }
              j += 1
            }
          }
          found
        },
        picking)).toMap

    // One task: each hot key's row from its splits' pieces.
    val keysProcessed = longMetric("numOutputRows")
    val aggregateIndexOfPercentile = percentiles.map(_._2)
    val aggregateIndexOfOther = others.map(_._2)
    val finalOthers = others.map(_._1.copy(mode = Final))
    val attributes = aggregateAttributes
    val results = resultExpressions
    val hotKeys = ranges.hotKeys
    sparkContext.parallelize(Seq(0), 1).mapPartitionsInternal { _ =>
      val project = UnsafeProjection.create(results, grouping ++ attributes)
      val finalInput = grouping ++ finalOthers.flatMap(_.aggregateFunction.inputAggBufferAttributes)
      // (A hot key has rows, as the input is deterministic; the filter is only a safeguard.)
      hotKeys.iterator.filter(_.partitions.exists(p => counts(p - firstSplit).rows > 0)).map {
        hot =>
          val splits = hot.partitions.map(_ - firstSplit)
          val values = new Array[Any](grouping.size + attributes.size)
          grouping.indices.foreach(i => values(i) = hot.key.get(i, grouping(i).dataType))
          boundPercentiles.indices.foreach { j =>
            val ranks = SplitRanks(splits.map(s => counts(s).held(j)))
            val atRank = splits.zip(ranks.offsets).flatMap { case (s, offset) =>
              picked.get(s).toSeq.flatMap(found => localRanks(s)(j).map(_ + offset).zip(found(j)))
            }.toMap
            values(grouping.size + aggregateIndexOfPercentile(j)) =
              boundPercentiles(j).resultFrom(ranks.total, atRank)
          }
          if (finalOthers.nonEmpty) {
            val buffers = splits.flatMap(s => counts(s).buffer)
            val merged = SortAggregationIterators.create(
              0,
              grouping,
              finalInput,
              buffers.iterator,
              finalOthers,
              finalOthers.map(_.resultAttribute),
              grouping.size,
              grouping ++ finalOthers.map(_.resultAttribute),
              new SQLMetric("sum"))
              .next()
            aggregateIndexOfOther.zipWithIndex.foreach { case (index, i) =>
              values(grouping.size + index) =
                merged.get(grouping.size + i, finalOthers(i).resultAttribute.dataType)
            }
          }
          keysProcessed += 1
          project(new GenericInternalRow(values)).copy(): InternalRow
      }
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): HotKeySplitAggregateExec =
    copy(child = newChild)
}

/**
 * What the first job returns for one split of a hot key: its rows, the ranks it holds per
 * percentile function, and the partial buffer of the other functions (None without any, or
 * when the split is empty).
 */
case class SplitCount(rows: Long, held: Array[Long], buffer: Option[UnsafeRow])

object HotKeySplitAggregateExec {

  /** Which hot keys the run split, and the sample's numbers it decided on (set when it runs). */
  val Split: TreeNodeTag[String] = TreeNodeTag[String]("skewagg.hotKeySplit")
}
