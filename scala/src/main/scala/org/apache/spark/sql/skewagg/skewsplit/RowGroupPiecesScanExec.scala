package org.apache.spark.sql.skewagg.skewsplit

import org.apache.spark.{Partition, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.physical.{Partitioning, UnknownPartitioning}
import org.apache.spark.sql.execution.{FileSourceScanExec, LeafExecNode, SparkPlan}
import org.apache.spark.sql.execution.datasources.{FilePartition, FileScanRDD}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.vectorized.ColumnarBatch

/**
 * An unbucketed file scan read in the given pieces, one task each, instead of Spark's byte-sized
 * splits: the skewed buckets of a bucketed Parquet table cut by rows at row group starts
 * ([[ParquetRowGroups.pieces]]), so that each task reads about as many rows. The rows (or
 * batches) are exactly the scan's: each piece is read by the scan's own reader, its
 * `FileScanRDD` computing a file partition of the piece's byte ranges. Files that no piece names,
 * and any input that is not a `FileScanRDD`, are read in the scan's own splits.
 */
case class RowGroupPiecesScanExec(scan: FileSourceScanExec, pieces: Seq[RowGroupPiece])
    extends LeafExecNode {

  override def output: Seq[Attribute] = scan.output
  override def outputPartitioning: Partitioning = UnknownPartitioning(0)
  override def supportsColumnar: Boolean = scan.supportsColumnar
  override def vectorTypes: Option[Seq[String]] = scan.vectorTypes

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of output rows"))

  override def nodeName: String = "RowGroupPiecesScan"

  override def simpleString(maxFields: Int): String = {
    val rows = pieces.map(_.rows)
    val sizes = if (rows.isEmpty) "" else f", ${rows.min}%,d to ${rows.max}%,d rows each"
    s"$nodeName [${pieces.size} pieces$sizes] ${scan.simpleString(maxFields)}"
  }

  override def doCanonicalize(): SparkPlan =
    copy(scan = scan.canonicalized.asInstanceOf[FileSourceScanExec])

  /** The scan's input, its file partitions replaced by the pieces. */
  private def input: RDD[InternalRow] = scan.inputRDDs().head match {
    case files: FileScanRDD =>
      val byPath = files.filePartitions.flatMap(_.files).groupBy(_.toPath.toString)
      val named = pieces.flatMap(_.ranges.map(_.path)).toSet
      if (!named.subsetOf(byPath.keySet)) return files
      val ofPieces = pieces.map(_.ranges.map { r =>
        byPath(r.path).head.copy(start = r.start, length = r.length)
      })
      val unnamed = files.filePartitions.map(_.files.filterNot(f => named(f.toPath.toString)))
      val all = (ofPieces ++ unnamed.map(_.toSeq)).filter(_.nonEmpty)
      new PiecesRDD(files, all.zipWithIndex.map { case (fs, i) => FilePartition(i, fs.toArray) })
    case other => other
  }

  override protected def doExecute(): RDD[InternalRow] = {
    val rows = longMetric("numOutputRows")
    val schema = this.schema
    input.mapPartitionsWithIndexInternal { (index, it) =>
      val toUnsafe = UnsafeProjection.create(schema)
      toUnsafe.initialize(index)
      it.map { row => rows += 1; toUnsafe(row) }
    }
  }

  override protected def doExecuteColumnar(): RDD[ColumnarBatch] = {
    val rows = longMetric("numOutputRows")
    input.asInstanceOf[RDD[ColumnarBatch]].mapPartitionsInternal { batches =>
      batches.map { batch => rows += batch.numRows(); batch }
    }
  }
}

/** `files`' reader over other file partitions: it reads whatever partition it is given. */
private class PiecesRDD(files: FileScanRDD, pieces: Seq[FilePartition])
    extends RDD[InternalRow](files.sparkContext, Nil) {
  override protected def getPartitions: Array[Partition] = pieces.toArray
  override def compute(split: Partition, context: TaskContext): Iterator[InternalRow] =
    files.compute(split, context)
  override protected def getPreferredLocations(split: Partition): Seq[String] =
    files.preferredLocations(split)
}
