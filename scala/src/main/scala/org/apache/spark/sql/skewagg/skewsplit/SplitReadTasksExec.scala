package org.apache.spark.sql.skewagg.skewsplit

import org.apache.spark.SparkException
import org.apache.spark.rdd.{PartitionPruningRDD, RDD}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.plans.physical.{
  HashPartitioning, Partitioning, UnknownPartitioning
}
import org.apache.spark.sql.execution.{
  CoalescedPartitionSpec, PartialReducerPartitionSpec, ShufflePartitionSpec, SparkPlan,
  UnaryExecNode
}
import org.apache.spark.sql.execution.adaptive.AQEShuffleReadExec

/**
 * Some tasks of a skew-split shuffle read: `child` is the read as the split made it (Spark's skew
 * join split, or skewagg's split of a user's repartition), and as Spark's coalescing may change
 * it before the stage runs. With `pieces`, the tasks that read pieces of the `split` shuffle
 * partitions (a piece of the partition, or, on a join's other input, the whole partition read
 * again for each piece); otherwise the other tasks, each reading whole partitions.
 *
 * A task is kept by the partitions its spec reads, on which the two inputs of a split join agree
 * task by task, so two such nodes over the join's inputs keep the same tasks and the join joins
 * them as before. Spark's coalescing never merges a split partition with others, so a task reads
 * only split partitions or none.
 *
 * The tasks that are not pieces each hold every row of their keys: [[WholeShufflePartitions]].
 */
case class SplitReadTasksExec(child: SparkPlan, split: Set[Int], pieces: Boolean)
    extends UnaryExecNode {

  override def output: Seq[Attribute] = child.output

  override def outputPartitioning: Partitioning = {
    val tasks = kept.size
    if (pieces) UnknownPartitioning(tasks)
    else read.child.outputPartitioning match {
      case h: HashPartitioning => WholeShufflePartitions(h.expressions, tasks)
      case _ => UnknownPartitioning(tasks)
    }
  }

  override protected def doExecute(): RDD[InternalRow] = {
    val keep = kept.toSet
    PartitionPruningRDD.create(child.execute(), keep.contains)
  }

  override def simpleString(maxFields: Int): String =
    s"SplitReadTasks [${if (pieces) "pieces" else "whole partitions"} of " +
      s"${split.toSeq.sorted.mkString(", ")}: ${kept.size} tasks]"

  override protected def withNewChildInternal(newChild: SparkPlan): SplitReadTasksExec =
    copy(child = newChild)

  private def read: AQEShuffleReadExec = child match {
    case r: AQEShuffleReadExec => r
    case other => throw SparkException.internalError(
        s"skewagg: SplitReadTasksExec reads a skew-split shuffle read, not ${other.nodeName}")
  }

  /** The tasks of `child` this node keeps. */
  private def kept: Seq[Int] = read.partitionSpecs.zipWithIndex.collect {
    case (spec, i) if isPiece(spec) == pieces => i
  }

  private def isPiece(spec: ShufflePartitionSpec): Boolean = spec match {
    case _: PartialReducerPartitionSpec => true
    case c: CoalescedPartitionSpec =>
      (c.startReducerIndex until c.endReducerIndex).exists(split.contains)
    case _ => false
  }
}
