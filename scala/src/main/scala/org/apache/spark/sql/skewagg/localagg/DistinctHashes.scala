package org.apache.spark.sql.skewagg.localagg

import org.apache.spark.util.AccumulatorV2

/**
 * A HyperLogLog sketch of 64-bit hashes as an accumulator: each task adds the hashes of what it
 * emits, the driver merges the tasks' registers and estimates how many distinct values all of
 * them emitted (standard error about 1.04 / sqrt(2^Bits), 3.3%). Its registers are allocated at
 * the first hash, so a task that adds none sends nothing back.
 */
final class DistinctHashes extends AccumulatorV2[Long, Long] {
  import DistinctHashes.{Bits, Registers}

  private var registers: Array[Byte] = _

  override def isZero: Boolean = registers == null

  override def copy(): DistinctHashes = {
    val c = new DistinctHashes
    if (registers != null) c.registers = registers.clone()
    c
  }

  override def reset(): Unit = registers = null

  /** Register: the top `Bits` bits of the hash; value: the rank of the first 1 in the rest. */
  override def add(hash: Long): Unit = {
    if (registers == null) registers = new Array[Byte](Registers)
    val index = (hash >>> (64 - Bits)).toInt
    val rank = java.lang.Long.numberOfLeadingZeros((hash << Bits) | (1L << (Bits - 1))) + 1
    if (rank > registers(index)) registers(index) = rank.toByte
  }

  override def merge(other: AccumulatorV2[Long, Long]): Unit = other match {
    case o: DistinctHashes if o.registers != null =>
      if (registers == null) registers = new Array[Byte](Registers)
      var i = 0
      while (i < Registers) {
        if (o.registers(i) > registers(i)) registers(i) = o.registers(i)
        i += 1
      }
    case _: DistinctHashes =>
    case o => throw new UnsupportedOperationException(
        s"cannot merge ${getClass.getSimpleName} with ${o.getClass.getSimpleName}")
  }

  /** The estimated number of distinct hashes added (linear counting while registers are empty). */
  override def value: Long = if (registers == null) 0L
  else {
    var sum = 0.0
    var zeros = 0
    registers.foreach { r =>
      sum += math.pow(2.0, -r)
      if (r == 0) zeros += 1
    }
    val m = Registers.toDouble
    val raw = 0.7213 / (1 + 1.079 / m) * m * m / sum
    math.round(if (raw <= 2.5 * m && zeros > 0) m * math.log(m / zeros) else raw)
  }
}

object DistinctHashes {
  private val Bits = 10
  private val Registers = 1 << Bits
}
