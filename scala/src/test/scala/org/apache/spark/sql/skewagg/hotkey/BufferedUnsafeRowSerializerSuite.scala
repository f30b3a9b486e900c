package org.apache.spark.sql.skewagg.hotkey

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, InputStream}

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.serializer.Serializer
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.UnsafeRowSerializer
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.sql.types.{LongType, StringType}
import org.apache.spark.unsafe.types.UTF8String

/** The routing shuffles' serializer: Spark's bytes, read in pieces, records movable. */
class BufferedUnsafeRowSerializerSuite extends AnyFunSuite {

  /** (i, a string of `i * 7` bytes, up to 100 KB): rows larger than the stream's buffer too. */
  private val rows: Seq[UnsafeRow] = {
    val project = UnsafeProjection.create(
      Seq(BoundReference(0, LongType, nullable = false), BoundReference(1, StringType, true)))
    (Seq(0L, 1L, 1000L, 5000L, 14000L) ++ (2L until 600L)).map { i =>
      project(InternalRow(i, if (i % 11 == 3) null else UTF8String.fromString("x" * (i * 7).toInt)))
        .copy()
    }
  }

  private def written(serializer: Serializer, rows: Seq[UnsafeRow]): Array[Byte] = {
    val bytes = new ByteArrayOutputStream()
    val out = serializer.newInstance().serializeStream(bytes)
    rows.foreach { row => out.writeKey(0); out.writeValue(row) }
    out.close()
    bytes.toByteArray
  }

  /** `bytes` handed out at most `most` at a time, as a decompressing stream may. */
  private def inPieces(bytes: Array[Byte], most: Int): InputStream =
    new ByteArrayInputStream(bytes) {
      override def read(b: Array[Byte], off: Int, len: Int): Int =
        super.read(b, off, math.min(len, most))
    }

  private def read(serializer: Serializer, in: InputStream): Seq[UnsafeRow] =
    serializer.newInstance().deserializeStream(in).asKeyValueIterator.map { case (_, row) =>
      row.asInstanceOf[UnsafeRow].copy()
    }.toList // (strict: Scala 2.12's Iterator.toSeq is lazy)

  private def buffered(dataSize: SQLMetric = new SQLMetric("size")) =
    new BufferedUnsafeRowSerializer(2, dataSize)

  test("writes the bytes of Spark's UnsafeRowSerializer, counting the rows' sizes") {
    val dataSize = new SQLMetric("size")
    val ours = written(buffered(dataSize), rows)
    assert(ours.sameElements(written(new UnsafeRowSerializer(2, new SQLMetric("size")), rows)))
    assert(dataSize.value == rows.map(_.getSizeInBytes.toLong).sum)
    assert(rows.exists(_.getSizeInBytes > 32 * 1024))
  }

  test("reads its rows (and Spark's) back whole, whatever pieces the stream reads in") {
    val bytes = written(buffered(), rows)
    for (most <- Seq(1, 3, 4, 4096, Int.MaxValue)) {
      assert(read(buffered(), inPieces(bytes, most)) == rows, most)
    }
    assert(read(new UnsafeRowSerializer(2, new SQLMetric("size")), inPieces(bytes, 5)) == rows)
    assert(read(buffered(), new ByteArrayInputStream(written(buffered(), Nil))).isEmpty)
    assert(read(buffered(), new ByteArrayInputStream(Array.emptyByteArray)).isEmpty)
  }

  test("records can be moved: rows flushed one by one, concatenated in another order") {
    // (As Spark's serialized shuffle writer does: one stream, a record's bytes taken after each
    // flush, partitions' records concatenated without an end marker.)
    val sink = new ByteArrayOutputStream()
    val out = buffered().newInstance().serializeStream(sink)
    val records = rows.take(300).map { row =>
      sink.reset()
      out.writeKey(0).writeValue(row).flush()
      sink.toByteArray
    }
    val order = records.indices.reverse.filter(_ % 3 != 1) ++ records.indices.filter(_ % 3 == 1)
    val moved = order.flatMap(records(_)).toArray
    assert(read(buffered(), inPieces(moved, 7)) == order.map(rows(_)))
  }

  test("a truncated or corrupt block is an error saying so, not fewer rows") {
    val bytes = written(buffered(), rows.take(10))
    val negative = bytes.clone()
    negative(0) = 0x80.toByte
    val blocks = Seq(2, 4 + rows.head.getSizeInBytes + 3, bytes.length - 2).map(bytes.take) :+
      negative
    for (block <- blocks) {
      val error = intercept[IllegalStateException] {
        read(buffered(), new ByteArrayInputStream(block))
      }
      assert(
        error.getMessage.matches("A shuffle block of UnsafeRows (ends inside a row|holds a " +
          "row of negative size).*: the block is truncated or corrupt"),
        error.getMessage)
    }
  }
}
