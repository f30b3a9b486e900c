package org.apache.spark.sql.skewagg

import org.scalactic.source.Position
import org.scalatest.{Args, Status, Tag}
import org.scalatest.funsuite.AnyFunSuite

/**
 * A suite whose tests `make test` spreads over the Spark builds ([[TestSlice]]): each test runs on
 * one build, so the builds together run the suite once, not once each (docs/testing.md, "What
 * runs where"). A test tagged [[EveryBuild]] runs on every build: each such suite has one, so
 * every build runs every suite, and they are the tests of what differs between lines (a shim, a
 * [[LineFeatures]] flag). A test tagged [[SinceSpark40]] goes to a build on Spark 4.0 or newer.
 * `make test-full` (`SKEWAGG_TEST_SLICE=all`) runs every test on every build.
 */
trait SpreadOverBuilds extends AnyFunSuite {
  private var elsewhere = 0

  override protected def test(testName: String, testTags: Tag*)(testFun: => Any)(implicit
      pos: Position): Unit = {
    val since = if (testTags.contains(SinceSpark40)) Some("4.0") else None
    val slice = TestSlice.current
    if (testTags.contains(EveryBuild) || slice.holds(suiteName, testName, since)) {
      super.test(testName, testTags: _*)(testFun)(pos)
    } else elsewhere += 1
  }

  override def run(testName: Option[String], args: Args): Status = {
    require(
      testNames.nonEmpty,
      s"$suiteName runs no test on ${TestSlice.current}: tag a test of it EveryBuild")
    if (elsewhere > 0) {
      println(s"== $suiteName: ${testNames.size} of ${testNames.size + elsewhere} tests run on " +
        s"${TestSlice.current}, the others on other builds (SKEWAGG_TEST_SLICE=all: every one)")
    }
    super.run(testName, args)
  }
}

/** A test [[SpreadOverBuilds]] runs on every build. */
object EveryBuild extends Tag("skewagg.EveryBuild")

/** A test of a feature Spark 4.0 added: [[SpreadOverBuilds]] gives it to a 4.0+ build. */
object SinceSpark40 extends Tag("skewagg.SinceSpark40")
