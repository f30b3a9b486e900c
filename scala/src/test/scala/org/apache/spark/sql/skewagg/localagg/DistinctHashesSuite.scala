package org.apache.spark.sql.skewagg.localagg

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.AttributeReference
import org.apache.spark.sql.types.{DataType, DateType, IntegerType, LongType, StringType}
import org.apache.spark.unsafe.hash.Murmur3_x86_32
import org.apache.spark.unsafe.types.UTF8String

class DistinctHashesSuite extends AnyFunSuite {

  /** A well-mixed 64-bit hash of `i`, as XxHash64 gives the keys in a query. */
  private def hash(i: Long): Long = {
    val high = Murmur3_x86_32.hashLong(i, 42).toLong
    val low = Murmur3_x86_32.hashLong(i, 7).toLong
    (high << 32) | (low & 0xffffffffL)
  }

  private def sketchOf(values: Iterable[Long]): DistinctHashes = {
    val s = new DistinctHashes
    values.foreach(v => s.add(hash(v)))
    s
  }

  test("estimates distinct counts from ten to a million within 10%, repeats ignored") {
    for (n <- Seq(10, 1000, 20000, 1000000)) {
      val estimate = sketchOf((0L until n.toLong) ++ (0L until n.toLong)).value
      assert(math.abs(estimate - n) <= 0.1 * n, s"$n distinct estimated as $estimate")
    }
  }

  test("merging tasks' sketches counts the union: keys repeated across tasks once") {
    val tasks = (0 until 8).map(_ => sketchOf(0L until 5000L))
    val merged = tasks.head.copy()
    tasks.tail.foreach(merged.merge)
    assert(math.abs(merged.value - 5000) <= 500, merged.value)
    val disjoint = sketchOf(0L until 5000L)
    disjoint.merge(sketchOf(5000L until 10000L))
    assert(math.abs(disjoint.value - 10000) <= 1000, disjoint.value)
  }

  test("an empty sketch is zero, sends nothing, and merges as nothing") {
    val empty = new DistinctHashes
    assert(empty.isZero && empty.value == 0)
    val s = sketchOf(0L until 100L)
    val before = s.value
    s.merge(empty)
    assert(s.value == before)
    s.reset()
    assert(s.isZero)
  }

  test("the flushing aggregate's key hash: keys of each kind counted within 10%, nulls once") {
    def estimate(keyType: DataType, value: Int => Any): Long = {
      val key = AttributeReference("k", keyType)()
      val output = Seq(key, AttributeReference("buffer", LongType)())
      val hash = FlushingPartialAggregateExec.keyHash(Seq(keyType), Seq(key), output)
      val s = new DistinctHashes
      for (i <- 0 until 20000; _ <- 0 until 2) s.add(hash(InternalRow(value(i), 1L)))
      s.value
    }
    val kinds = Seq[(DataType, Int => Any)](
      LongType -> (_.toLong),
      IntegerType -> identity,
      DateType -> identity,
      StringType -> (i => UTF8String.fromString(s"key $i")))
    for ((keyType, value) <- kinds) {
      val n = estimate(keyType, value)
      assert(math.abs(n - 20000) <= 2000, s"20,000 $keyType keys estimated as $n")
      assert(estimate(keyType, _ => null) == 1, s"a null $keyType key")
    }
  }
}
