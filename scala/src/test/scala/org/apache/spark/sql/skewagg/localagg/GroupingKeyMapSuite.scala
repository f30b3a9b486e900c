package org.apache.spark.sql.skewagg.localagg

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, UnsafeProjection}
import org.apache.spark.sql.types.LongType

/** The flushing aggregate's key maps, alone: every key found again and walked exactly once. */
class GroupingKeyMapSuite extends AnyFunSuite {

  /** The keys `k` of rows (value, k) put into `map` with values "v<k>" (null key: "null"). */
  private def fill(map: GroupingKeyMap[String], keys: Seq[Any]): Unit = keys.foreach { k =>
    val row = InternalRow(0.5, k)
    assert(map.get(row) == null, s"$k before it was put")
    map.put(row, s"v$k")
  }

  /** Every key's value by get, absent keys null, and the cursor's (key, value) pairs. */
  private def check(
      map: GroupingKeyMap[String],
      keys: Seq[Any],
      absent: Seq[Any],
      keyOf: (InternalRow, Int) => Any): Unit = {
    keys.foreach(k => assert(map.get(InternalRow(0.5, k)) == s"v$k", s"key $k"))
    absent.foreach(k => assert(map.get(InternalRow(0.5, k)) == null, s"absent key $k"))
    assert(map.size == keys.size)
    val walked = Seq.newBuilder[(Any, String)]
    val c = map.cursor()
    while (c.advance()) walked += ((if (c.key.isNullAt(0)) null else keyOf(c.key, 0)) -> c.value)
    assert(walked.result().sortBy(_._2) == keys.map(k => k -> s"v$k").sortBy(_._2))
  }

  private val longKeys: Seq[Any] =
    Seq(0L, -1L, 1L, Long.MinValue, Long.MaxValue, null) ++ (1L to 200L).map(_ << 20)

  test("by value, long keys: extremes, multiples of 2^20 and a null key") {
    val map = new GroupingKeyMap.ByValue[String](1, isInt = false, longKeys.size)
    fill(map, longKeys)
    check(map, longKeys, Seq(2L, 201L << 20, Long.MinValue + 1), _.getLong(_))
  }

  test("by value, int keys, the table full to its limit, heavy keys carried to a new map") {
    val keys: Seq[Any] = Seq(0, -1, Int.MinValue, Int.MaxValue, null) ++ (1 to 3)
    val map = new GroupingKeyMap.ByValue[String](1, isInt = true, keys.size)
    fill(map, keys)
    check(map, keys, Seq(4, 5, -2), _.getInt(_))
    // Its heavy keys carried into a new map by the cursor's key rows, as a flush does.
    val carried = new GroupingKeyMap.ByValue[String](1, isInt = true, 2)
    val c = map.cursor()
    while (c.advance()) if (c.value == "vnull" || c.value == s"v${Int.MinValue}") {
      carried.putKey(c.key, c.value)
    }
    check(carried, Seq(null, Int.MinValue), Seq(0, -1), _.getInt(_))
  }

  test("by value refuses more keys than it was sized for instead of probing forever") {
    val map = new GroupingKeyMap.ByValue[String](1, isInt = false, 4)
    fill(map, Seq(1L, 2L, 3L, null))
    intercept[IllegalArgumentException](map.put(InternalRow(0.5, 9L), "v9"))
  }

  test("by row, a projected key, and keys carried over") {
    val project = UnsafeProjection.create(Seq(BoundReference(1, LongType, nullable = true)))
    val map = new GroupingKeyMap.ByRow[String](project, 4)
    fill(map, longKeys)
    check(map, longKeys, Seq(2L), _.getLong(_))
    val carried = new GroupingKeyMap.ByRow[String](project, 1)
    val c = map.cursor()
    while (c.advance()) if (c.value == "v0") carried.putKey(c.key, c.value)
    check(carried, Seq(0L), Seq(-1L), _.getLong(_))
  }
}
