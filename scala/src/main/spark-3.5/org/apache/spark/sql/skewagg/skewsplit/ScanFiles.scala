package org.apache.spark.sql.skewagg.skewsplit

import org.apache.spark.paths.SparkPath
import org.apache.spark.sql.execution.FileSourceScanExec
import org.apache.spark.sql.execution.datasources.PartitionedFile

/** The files a file scan reads, whole. */
object ScanFiles {

  /** Spark 3.5 lists a scan's files as partition directories of file statuses. */
  def selected(scan: FileSourceScanExec): Seq[PartitionedFile] =
    scan.selectedPartitions.toSeq.flatMap { dir =>
      dir.files.map { f =>
        PartitionedFile(
          dir.values,
          SparkPath.fromPath(f.getPath),
          0L,
          f.getLen,
          Array.empty[String],
          f.getModificationTime,
          f.getLen)
      }
    }
}
