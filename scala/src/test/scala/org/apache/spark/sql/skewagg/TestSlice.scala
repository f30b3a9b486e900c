package org.apache.spark.sql.skewagg

/**
 * Which share of the slow tests one test JVM runs. `make test` spreads the fuzz corpus and the
 * tests of the suites that mix in [[SpreadOverBuilds]] over the Spark builds (build/run-tests
 * asks build.sbt for it): build `index` of `builds`, each build named by its Spark line and Scala
 * binary in build/spark-lines's order (`SKEWAGG_TEST_SLICE=4/3.5_2.12,4.0_2.13,...,4.3_2.13`).
 * `all` or unset (make test-full, or a developer's `build/sbt spark43/test`) runs every test and
 * case.
 */
case class TestSlice(index: Int, builds: IndexedSeq[String]) {
  require(
    0 <= index && index < builds.size,
    s"test slice $index of ${builds.size} builds: index must be in 0 until ${builds.size}")

  /** Every test and every case. */
  def whole: Boolean = builds.size == 1

  /**
   * The cases of a corpus of `total` this build runs: `max(ceil(total / builds), minimum)`
   * consecutive cases, so the builds together run every case (and more where the minimum makes
   * slices longer), and each build enough of them to catch a break in its shims.
   */
  def cases(total: Int, minimum: Int): Range = {
    if (whole) return 0 until total
    val size = math.max((total + builds.size - 1) / builds.size, minimum)
    index * size until (index + 1) * size
  }

  def describe(total: Int, minimum: Int): String = {
    val range = cases(total, minimum)
    if (whole) s"${range.size}" else s"${range.size} (${range.head}-${range.last})"
  }

  /**
   * Whether this build runs test `name` of `suite`: each test goes to one build, chosen by a hash
   * of its suite and name (the same on every build, whatever tests a line leaves out), among the
   * builds whose line is at least `since` (a test of a feature older lines lack).
   */
  def holds(suite: String, name: String, since: Option[String]): Boolean = whole || {
    val eligible = builds.indices.filter { i =>
      since.forall(s => TestSlice.atLeast(builds(i).takeWhile(_ != '_'), s))
    }
    eligible.nonEmpty &&
    eligible(Math.floorMod((suite + "\u0000" + name).hashCode, eligible.size)) == index
  }

  override def toString: String =
    if (whole) "all" else s"build ${builds(index)} ($index of ${builds.mkString(", ")})"
}

object TestSlice {
  val Whole: TestSlice = TestSlice(0, IndexedSeq("all"))

  /** `SKEWAGG_TEST_SLICE`: `index/build,build,...` or `all`; unset (or empty), every test. */
  lazy val current: TestSlice =
    sys.env.get("SKEWAGG_TEST_SLICE").filter(_.trim.nonEmpty).map(parse).getOrElse(Whole)

  private val Build = """\d+\.\d+_\d+\.\d+"""
  private val IndexOfBuilds = s"(\\d+)/($Build(?:,$Build)*)".r

  def parse(text: String): TestSlice = text.trim match {
    case "all" => Whole
    case IndexOfBuilds(i, builds) if i.toInt < builds.split(",").length =>
      TestSlice(i.toInt, builds.split(",").toIndexedSeq)
    case other =>
      throw new IllegalArgumentException(
        s"SKEWAGG_TEST_SLICE=$other: expected all, or (what build.sbt makes of spread) this " +
          "build's index and every build's Spark line and Scala binary (1/3.5_2.12,4.0_2.13)")
  }

  /** Whether Spark line `line` (such as 4.1) is `since` or newer. */
  def atLeast(line: String, since: String): Boolean = {
    def majorMinor(l: String): (Int, Int) = l.split('.') match {
      case Array(major, minor) => (major.toInt, minor.toInt)
      case _ => throw new IllegalArgumentException(s"$l: expected a Spark line such as 4.1")
    }
    Ordering[(Int, Int)].gteq(majorMinor(line), majorMinor(since))
  }
}
