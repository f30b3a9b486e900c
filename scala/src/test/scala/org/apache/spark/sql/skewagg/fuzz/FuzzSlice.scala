package org.apache.spark.sql.skewagg.fuzz

/**
 * Which cases of a fuzz corpus one test run takes: `index` of `count` slices (build.sbt passes
 * each Spark line its row of build/spark-lines as `SKEWAGG_FUZZ_SLICE=index/count`), or every case
 * (`SKEWAGG_FUZZ_SLICE=all`, `make test-full`). A slice of a corpus of `total` cases holds
 * `max(ceil(total / count), minimum)` consecutive cases, so the slices together hold every case
 * (and more when the minimum makes them longer) and each line still runs enough of them to catch
 * a break in its shims.
 */
case class FuzzSlice(index: Int, count: Int) {
  require(0 <= index && index < count, s"fuzz slice $index/$count: index must be in 0 until count")

  /** Every case of the corpus. */
  def whole: Boolean = count == 1

  def cases(total: Int, minimum: Int): Range = {
    if (whole) return 0 until total
    val size = math.max((total + count - 1) / count, minimum)
    index * size until (index + 1) * size
  }

  def describe(total: Int, minimum: Int): String = {
    val range = cases(total, minimum)
    if (whole) s"${range.size}" else s"${range.size} (${range.head}-${range.last})"
  }
}

object FuzzSlice {
  val Whole: FuzzSlice = FuzzSlice(0, 1)

  /** `SKEWAGG_FUZZ_SLICE`: `index/count` or `all`; unset, every case. */
  def fromEnv(): FuzzSlice = sys.env.get("SKEWAGG_FUZZ_SLICE").map(parse).getOrElse(Whole)

  private val IndexOfCount = """(\d+)/(\d+)""".r

  def parse(text: String): FuzzSlice = text.trim match {
    case "all" => Whole
    case IndexOfCount(i, n) => FuzzSlice(i.toInt, n.toInt)
    case other =>
      throw new IllegalArgumentException(
        s"SKEWAGG_FUZZ_SLICE=$other: expected index/count (such as 1/4) or all")
  }
}
