package org.apache.spark.sql.skewagg.window

/**
 * The buffer Spark's `ntile(buckets)` holds after the first `rows` rows of a window partition of
 * `total` rows: (rowNumber, bucket, bucketThreshold, bucketSize, bucketsWithPadding), the layout
 * of Spark's `NTile` (windowExpressions.scala).
 *
 * Spark's rule: bucketSize = total / buckets, the first `total % buckets` buckets hold one row
 * more, and the row at 0-based index i starts bucket j + 1 when i = T(j) = j * bucketSize +
 * min(j, padding). After `rows` rows the bucket is the number of starts at or before row
 * `rows - 1`, and the threshold is the next start.
 */
object NTileSeed {

  def after(rows: Long, total: Long, buckets: Int): Seq[Int] = {
    val size = (total / buckets).toInt
    val padding = (total % buckets).toInt
    val bucket =
      if (rows == 0) 0L
      else {
        val last = rows - 1 // the 0-based index of the last row read
        val padded = padding.toLong * (size + 1) // the rows of the buckets with one more row
        if (last < padded) last / (size + 1) + 1
        else padding + (last - padded) / size + 1
      }
    val threshold = bucket * size + math.min(bucket, padding.toLong)
    Seq(rows.toInt, bucket.toInt, threshold.toInt, size, padding)
  }
}
