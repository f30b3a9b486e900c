package org.apache.spark.sql.skewagg.skewsplit

import org.apache.spark.sql.execution.FileSourceScanExec
import org.apache.spark.sql.execution.datasources.PartitionedFile

/** The files a file scan reads, whole. */
object ScanFiles {

  /** Spark 4.0+ lists a scan's files as a file listing. */
  def selected(scan: FileSourceScanExec): Seq[PartitionedFile] =
    scan.selectedPartitions.toPartitionArray.toSeq
}
