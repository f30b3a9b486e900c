package org.apache.spark.sql.skewagg.skewsplit

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.FileStatus
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.util.HadoopInputFile

import org.apache.spark.sql.execution.datasources.PartitionedFile
import org.apache.spark.util.ThreadUtils

/**
 * The row groups of one Parquet file, in file order: the byte offset each starts at and its rows.
 * A reader of the byte range [a, b) of the file reads the row groups whose middle lies in it
 * (Parquet's split rule), so ranges cut at row group starts read each row group exactly once.
 */
final case class FileRowGroups(path: String, length: Long, starts: Array[Long], rows: Array[Long]) {
  def totalRows: Long = rows.sum

  /** The byte range of the row groups `from until to`, the first from 0, the last to the end. */
  def range(from: Int, to: Int): FileRange = {
    val start = if (from == 0) 0L else starts(from)
    val end = if (to == starts.length) length else starts(to)
    FileRange(path, start, end - start)
  }
}

/** A byte range of a file, read as one split. */
final case class FileRange(path: String, start: Long, length: Long)

/** A piece of a split read: byte ranges of one or more files, and the rows they hold. */
final case class RowGroupPiece(ranges: Seq[FileRange], rows: Long)

object ParquetRowGroups {

  /**
   * Each file's row groups from its footer, or None when any footer cannot be read: the caller
   * then decides by bytes, as without footers. Footers are read on the driver, up to 16 at a
   * time, and kept (the last [[CachedFiles]] files, by path, size and modification time), so
   * planning the same table again reads none. Any cut of a file into byte ranges reads each row
   * group once (the middle rule), so a footer read before a rewrite of the file could only make
   * pieces uneven, never change what is read.
   */
  def read(files: Seq[PartitionedFile], hadoopConf: Configuration): Option[Seq[FileRowGroups]] =
    try {
      Some(ThreadUtils.parmap(files, "skewagg-parquet-footers", 16) { file =>
        val key = (file.toPath.toString, file.fileSize, file.modificationTime)
        Option(cache.synchronized(cache.get(key))).getOrElse {
          val groups = readFooter(file, hadoopConf)
          cache.synchronized(cache.put(key, groups))
          groups
        }
      })
    } catch {
      case NonFatal(_) => None
    }

  private def readFooter(file: PartitionedFile, hadoopConf: Configuration): FileRowGroups = {
    val path = file.toPath
    val status = new FileStatus(file.fileSize, false, 0, 0L, file.modificationTime, path)
    val reader = ParquetFileReader.open(HadoopInputFile.fromStatus(status, hadoopConf))
    try {
      val blocks = reader.getFooter.getBlocks.asScala.sortBy(_.getStartingPos)
      FileRowGroups(
        path.toString,
        file.fileSize,
        blocks.map(_.getStartingPos).toArray,
        blocks.map(_.getRowCount).toArray)
    } finally reader.close()
  }

  /** How many files' row groups are kept. */
  val CachedFiles = 10000

  private val cache = new java.util.LinkedHashMap[(String, Long, Long), FileRowGroups](
    256,
    0.75f,
    true) {
    override def removeEldestEntry(
        eldest: java.util.Map.Entry[(String, Long, Long), FileRowGroups]): Boolean =
      size() > CachedFiles
  }

  /**
   * `files` cut into pieces of about `pieceRows` rows each, at row group starts: counting rows
   * across the files in order, each row group goes to the piece its middle row falls in (piece
   * `n` holds the rows `n * pieceRows` until `(n + 1) * pieceRows`), so pieces even out over the
   * whole and none is left with a sliver. A piece may span files. Every byte of every file is
   * in exactly one piece (a file without row groups goes whole).
   */
  def pieces(files: Seq[FileRowGroups], pieceRows: Long): Seq[RowGroupPiece] = {
    val done = Seq.newBuilder[RowGroupPiece]
    var ranges = Vector.empty[FileRange]
    var rows = 0L
    var seen = 0L
    var current = 0L
    files.foreach { file =>
      var from = 0
      for (g <- file.rows.indices) {
        val piece = (seen + file.rows(g) / 2) / pieceRows
        if (piece != current && (rows > 0 || ranges.nonEmpty || from < g)) {
          if (from < g) ranges :+= file.range(from, g)
          done += RowGroupPiece(ranges, rows)
          ranges = Vector.empty
          rows = 0L
          from = g
        }
        current = piece
        rows += file.rows(g)
        seen += file.rows(g)
      }
      if (from < file.rows.length || file.rows.isEmpty) {
        ranges :+= file.range(from, file.rows.length)
      }
    }
    if (ranges.nonEmpty) done += RowGroupPiece(ranges, rows)
    done.result()
  }
}
