package org.apache.spark.sql.skewagg.singlekey

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Ascending, BindReferences, Expression, GenericInternalRow, SortOrder, UnsafeProjection, UnsafeRow
}
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, Final, Partial}
import org.apache.spark.sql.execution.SortExec
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.skewagg.{SkewAggConf, RecordedDecisions, TaskSlots}
import org.apache.spark.sql.skewagg.SkewAggDecision.AtRunTime
import org.apache.spark.sql.skewagg.hotkey.{ExternalSorts, HotKeyRanges, HotKeySplitSteps}

/**
 * The run of `plan`, a [[HotKeySplitAggregateExec]] (its `doExecute`), with the hot-key steps
 * ([[HotKeySplitSteps]]): the input sampled by the key and its sorted value, routed, the
 * ordinary keys aggregated as SingleKeyAggregate does; a hot key's splits summarized as
 * [[SplitCount]]s, folded per key into the ranks each split must find ([[SplitRanks]]), the
 * values at those ranks picked by a second job, and each key's row merged in one task.
 *
 * Rule: driver only, and never captured: its closures capture values copied into local vals
 * (expressions, bound functions, metrics), not these jobs or their plan.
 */
private[singlekey] final class HotKeySplitAggregateJobs(
    plan: HotKeySplitAggregateExec,
    steps: HotKeySplitSteps) {

  private val child = plan.child

  /** (function, its index in aggregateExpressions), for the percentile functions. */
  private def percentiles: Seq[(SortedRunPercentile, Int)] =
    plan.aggregateExpressions.zipWithIndex.collect {
      case (AggregateExpression(p: SortedRunPercentile, _, _, _, _), i) => (p, i)
    }

  /** The other functions: merged from per-split partial buffers for hot keys. */
  private def others: Seq[(AggregateExpression, Int)] =
    plan.aggregateExpressions.zipWithIndex.filterNot(
      _._1.aggregateFunction.isInstanceOf[SortedRunPercentile])

  def execute(): RDD[InternalRow] = {
    val conf = plan.conf
    val input = child.execute()
    val order = Seq(SortOrder(plan.sortValue, Ascending))
    val ranges = HotKeyRanges.sample(
      input,
      plan.groupingAttributes,
      Seq(order),
      child.output,
      conf.numShufflePartitions,
      conf.getConf(SkewAggConf.SINGLE_KEY_SPLIT_MIN_KEY_ROWS),
      conf.getConf(SkewAggConf.SINGLE_KEY_SPLIT_MAX_SPLITS),
      conf.getConf(SkewAggConf.SINGLE_KEY_SPLIT_SAMPLE_SIZE),
      conf.getConf(SkewAggConf.SINGLE_KEY_SPLIT_SAMPLE_FRACTION),
      TaskSlots.of(conf, conf.numShufflePartitions),
      conf.getConf(SkewAggConf.SKEW_FACTOR)).head
    RecordedDecisions.note(
      plan,
      AtRunTime(
        HotKeySplitAggregateExec.Step,
        ranges.describe(
          "value",
          conf.getConf(SkewAggConf.SINGLE_KEY_SPLIT_MIN_KEY_ROWS),
          SkewAggConf.SINGLE_KEY_SPLIT_MIN_KEY_ROWS.key)))
    steps.metrics.recordSplit(ranges.hotKeys.size, ranges.numSplits)

    val dependency =
      steps.route(input, ranges, plan.groupingAttributes, order, child.output)
    val ordinaryRows =
      aggregateOrdinaryKeys(steps.readPartitions(dependency, 0 until ranges.hashPartitions))
    val result = if (ranges.hotKeys.isEmpty) ordinaryRows
    else {
      val splits = steps.readPartitions(dependency, ranges.splitPartitions)
      steps.union(Seq(ordinaryRows, aggregateHotKeys(splits, ranges)))
    }
    steps.postDriverMetrics(Seq(plan.longMetric("splitInterpolations")))
    result
  }

  /** Ordinary keys: sorted by (keys, value), then one key at a time, as SingleKeyAggregate. */
  private def aggregateOrdinaryKeys(partitions: RDD[InternalRow]): RDD[InternalRow] = {
    val keys = plan.longMetric("numOutputRows")
    val rowsRead = plan.longMetric("numInputRows")
    val sortSpill = plan.longMetric("sortSpillSize")
    val functions = SingleKeyAggregateExec.withSpillMetric(
      plan.aggregateExpressions,
      plan.longMetric("spillSize"))
    val inputAttributes = child.output
    val byKeyAndValue = sortBy(plan.groupingAttributes :+ plan.sortValue)
    val grouping = plan.groupingAttributes
    val attributes = plan.aggregateAttributes
    val results = plan.resultExpressions
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

  /** Spark's sort of the plan's input by `expressions`, ascending (its sorter is used). */
  private def sortBy(expressions: Seq[Expression]): SortExec =
    SortExec(expressions.map(SortOrder(_, Ascending)), global = false, child = child)

  /**
   * Hot keys, from `splits` (the split partitions of `ranges`): a job reading every split (ranks
   * held, partial buffers of the other functions), a job over the splits that hold a wanted rank
   * (sorted, values at those ranks), and an RDD of one task that merges each key's pieces.
   */
  private def aggregateHotKeys(
      splits: RDD[InternalRow],
      ranges: HotKeyRanges): RDD[InternalRow] = {
    val inputAttributes = child.output
    val boundPercentiles = percentiles.map { case (p, _) =>
      BindReferences.bindReference(p, inputAttributes)
    }
    val firstSplit = ranges.hashPartitions
    val grouping = plan.groupingAttributes
    val partial = others.map(_._1.copy(mode = Partial))
    val rowsRead = plan.longMetric("numInputRows")
    val sortSpill = plan.longMetric("sortSpillSize")

    // Per split: the ranks it holds per percentile function, and the others' partial buffer.
    val counts: IndexedSeq[SplitCount] =
      steps.collected(splits, 0 until ranges.numSplits) { (split, rows) =>
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
            firstSplit + split, // (the split's partition of the routing shuffle)
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
      }

    // Per split and function: the ascending ranks within the split that the results need.
    var interpolations = 0L
    val localRanks: Array[Array[Array[Long]]] =
      steps.seeds(ranges, counts, ranges.hotKeys) { keyCounts =>
        val byFunction = boundPercentiles.indices.map { j =>
          val ranks = SplitRanks(keyCounts.map(_.held(j)))
          interpolations += ranks.straddling(boundPercentiles(j).rankPairs(ranks.total))
          ranks.localRanks(boundPercentiles(j).ranksNeeded(ranks.total).toSeq)
        }
        keyCounts.indices.map(s => byFunction.map(_(s)).toArray)
      }
    plan.longMetric("splitInterpolations").set(interpolations)

    // The values at those ranks: only the splits holding one sort their rows.
    val byValue = sortBy(Seq(plan.sortValue))
    val picking = localRanks.indices.filter(s => localRanks(s).exists(_.nonEmpty))
    val picked: Map[Int, Array[Array[AnyRef]]] = picking.zip(
      steps.collected(splits, picking) { (split, rows) =>
        val wanted = localRanks(split)
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
      }).toMap

    // One task: each hot key's row from its splits' pieces.
    val keysProcessed = plan.longMetric("numOutputRows")
    val aggregateIndexOfPercentile = percentiles.map(_._2)
    val aggregateIndexOfOther = others.map(_._2)
    val finalOthers = others.map(_._1.copy(mode = Final))
    val attributes = plan.aggregateAttributes
    val results = plan.resultExpressions
    val hotKeys = ranges.hotKeys
    steps.oneTask { () =>
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
}

/**
 * What the first job returns for one split of a hot key: its rows, the ranks it holds per
 * percentile function, and the partial buffer of the other functions (None without any, or
 * when the split is empty).
 */
case class SplitCount(rows: Long, held: Array[Long], buffer: Option[UnsafeRow])
