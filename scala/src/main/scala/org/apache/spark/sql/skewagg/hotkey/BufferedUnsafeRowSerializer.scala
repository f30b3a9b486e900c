package org.apache.spark.sql.skewagg.hotkey

import java.io.{InputStream, OutputStream}
import java.nio.ByteBuffer

import scala.reflect.ClassTag

import org.apache.spark.serializer.{
  DeserializationStream, SerializationStream, Serializer, SerializerInstance
}
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.unsafe.Platform

/**
 * UnsafeRows of `numFields` fields for a shuffle, in the bytes of Spark's `UnsafeRowSerializer`:
 * per row its size (4 bytes, high byte first) then its bytes, to the stream's end. Each stream
 * writes and reads through a buffer of its own, so a row costs a copy into or out of it, not the
 * several calls per row (each taking a lock) that Spark's makes to the buffered streams under
 * it. Records can be moved and concatenated, as Spark's can. `dataSize` adds up the rows' sizes
 * written.
 */
class BufferedUnsafeRowSerializer(numFields: Int, dataSize: SQLMetric)
    extends Serializer with Serializable {
  override def newInstance(): SerializerInstance =
    new BufferedUnsafeRowSerializer.Instance(numFields, dataSize)
  override private[spark] def supportsRelocationOfSerializedObjects: Boolean = true
}

object BufferedUnsafeRowSerializer {

  /** A stream's buffer, flushed to the stream when the next row does not fit. */
  private val BufferBytes = 32 * 1024

  /** What the reader's next size is at the stream's end. */
  private val EndOfStream = -1

  private class Instance(numFields: Int, dataSize: SQLMetric) extends SerializerInstance {
    override def serializeStream(out: OutputStream): SerializationStream =
      new RowsOut(out, dataSize)
    override def deserializeStream(in: InputStream): DeserializationStream =
      new RowsIn(in, numFields)

    // (Shuffles serialize streams only.)
    override def serialize[T: ClassTag](t: T): ByteBuffer =
      throw new UnsupportedOperationException
    override def deserialize[T: ClassTag](bytes: ByteBuffer): T =
      throw new UnsupportedOperationException
    override def deserialize[T: ClassTag](bytes: ByteBuffer, loader: ClassLoader): T =
      throw new UnsupportedOperationException
  }

  private def putInt(buffer: Array[Byte], at: Int, value: Int): Unit = {
    buffer(at) = (value >>> 24).toByte
    buffer(at + 1) = (value >>> 16).toByte
    buffer(at + 2) = (value >>> 8).toByte
    buffer(at + 3) = value.toByte
  }

  private def getInt(buffer: Array[Byte], at: Int): Int =
    (buffer(at) & 0xff) << 24 | (buffer(at + 1) & 0xff) << 16 | (buffer(at + 2) & 0xff) << 8 |
      (buffer(at + 3) & 0xff)

  /** Rows written to `out` through the buffer: `buffer(0 until end)` is not written yet. */
  private class RowsOut(out: OutputStream, dataSize: SQLMetric) extends SerializationStream {
    private[this] val buffer = new Array[Byte](BufferBytes)
    private[this] var end = 0

    override def writeKey[T: ClassTag](key: T): SerializationStream = this // (the partition id)

    override def writeValue[T: ClassTag](value: T): SerializationStream = {
      val row = value.asInstanceOf[UnsafeRow]
      val size = row.getSizeInBytes
      dataSize += size
      if (end + 4 + size > buffer.length) writeBuffer()
      putInt(buffer, end, size)
      end += 4
      if (size <= buffer.length - end) {
        row.writeToMemory(buffer, Platform.BYTE_ARRAY_OFFSET + end)
        end += size
      } else { // (a row larger than the buffer, after its size)
        writeBuffer()
        row.writeToStream(out, buffer)
      }
      this
    }

    private def writeBuffer(): Unit = if (end > 0) {
      out.write(buffer, 0, end)
      end = 0
    }

    override def flush(): Unit = {
      writeBuffer()
      out.flush()
    }

    override def close(): Unit = {
      writeBuffer()
      out.close()
    }

    override def writeObject[T: ClassTag](t: T): SerializationStream =
      throw new UnsupportedOperationException
    override def writeAll[T: ClassTag](iter: Iterator[T]): SerializationStream =
      throw new UnsupportedOperationException
  }

  /**
   * Rows read from `in` through the buffer: `buffer(start until end)` is read and not yet used.
   * Each row is copied to `rowBytes`, so it stays whole while the next row's size is read.
   */
  private class RowsIn(in: InputStream, numFields: Int) extends DeserializationStream {
    private[this] var buffer = new Array[Byte](BufferBytes)
    private[this] var start = 0
    private[this] var end = 0
    private[this] var rowBytes = new Array[Byte](256)
    private[this] val row = new UnsafeRow(numFields)

    /** Whether `n` bytes are read after `start` (false: the stream ended before them). */
    private def fill(n: Int): Boolean = {
      if (end - start < n) {
        val held = end - start
        val into = if (n > buffer.length) new Array[Byte](n) else buffer
        System.arraycopy(buffer, start, into, 0, held)
        buffer = into
        start = 0
        end = held
        var ended = false
        while (end < n && !ended) {
          val read = in.read(buffer, end, buffer.length - end)
          if (read < 0) ended = true else end += read
        }
      }
      end - start >= n
    }

    private def corrupt(what: String): Nothing = throw new IllegalStateException(
      s"A shuffle block of UnsafeRows $what: the block is truncated or corrupt")

    /** The next row's size, or [[EndOfStream]]. */
    private def readSize(): Int =
      if (fill(4)) {
        start += 4
        val size = getInt(buffer, start - 4)
        if (size < 0) corrupt(s"holds a row of negative size $size")
        size
      } else if (end > start) corrupt("ends inside a row's size")
      else EndOfStream

    private def readRow(size: Int): UnsafeRow = {
      if (!fill(size)) corrupt(s"ends inside a row of $size bytes")
      if (rowBytes.length < size) rowBytes = new Array[Byte](math.max(size, 2 * rowBytes.length))
      System.arraycopy(buffer, start, rowBytes, 0, size)
      start += size
      row.pointTo(rowBytes, size)
      row
    }

    override def asKeyValueIterator: Iterator[(Int, UnsafeRow)] =
      new Iterator[(Int, UnsafeRow)] {
        private[this] val pair = (0, row)
        private[this] var nextSize = 0
        advance()

        /** The next row's size read; the stream closed at its end (as Spark's reader does). */
        private def advance(): Unit = {
          nextSize = readSize()
          if (nextSize == EndOfStream) close()
        }

        override def hasNext: Boolean = nextSize != EndOfStream
        override def next(): (Int, UnsafeRow) = {
          if (!hasNext) throw new NoSuchElementException("no row after the end of the stream")
          readRow(nextSize)
          advance()
          pair
        }
      }

    override def readKey[T: ClassTag](): T = null.asInstanceOf[T] // (not written)

    override def readValue[T: ClassTag](): T = {
      val size = readSize()
      if (size == EndOfStream) throw new java.io.EOFException("no row after the end of the stream")
      readRow(size).asInstanceOf[T]
    }

    override def close(): Unit = in.close()

    override def readObject[T: ClassTag](): T = throw new UnsupportedOperationException
    override def asIterator: Iterator[Any] = throw new UnsupportedOperationException
  }
}
