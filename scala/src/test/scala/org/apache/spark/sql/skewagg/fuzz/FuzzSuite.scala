package org.apache.spark.sql.skewagg.fuzz

import org.apache.spark.sql.skewagg.{SkewAggSuiteBase, TestSlice}

/**
 * The fixed-seed corpus of randomized differential tests that CI runs, spread over the Spark
 * builds: each build runs its own slice of every kind's cases ([[TestSlice]]), so the builds
 * together run the whole corpus once. Every case with skewagg on, then switched off at run time,
 * must give the same rows (or the same error), and with skewagg off vanilla Spark's plan
 * ([[FuzzRunner]]). `make fuzz` runs any number of cases of any seed.
 */
class FuzzSuite extends SkewAggSuiteBase {
  private val Seed = 20261121L
  private val slice = TestSlice.current

  /** This build's cases of `generate` with seed [[Seed]] (`total` in the corpus): none failed. */
  private def passing(
      total: Int,
      minimum: Int,
      generate: (Long, Int) => FuzzCase): FuzzSummary = {
    val cases = slice.cases(total, minimum)
    // Expected failures (ANSI overflow both ways) would fill the log with stack traces.
    spark.sparkContext.setLogLevel("OFF")
    val outcomes =
      try cases.map(i => FuzzRunner.run(spark, generate(Seed, i)))
      finally spark.sparkContext.setLogLevel("WARN")
    val summary = FuzzSummary(outcomes)
    info(summary.text)
    assert(
      summary.failed.isEmpty,
      summary.failed.map(o => s"\n${o.failure.get}\n${o.fuzzCase.repro}").mkString("\n"))
    summary
  }

  private def total(variable: String, default: Int): Int =
    sys.env.get(variable).map(_.toInt).getOrElse(default)

  private val Cases = total("SKEWAGG_FUZZ_CASES", 200)

  test(s"${slice.describe(Cases, 30)} random cases of seed $Seed: skewagg never changes a result") {
    val summary = passing(Cases, 30, FuzzGenerator.generate)
    // The slice must exercise the rewrites, or it proves nothing.
    assert(summary.outcomes.count(_.rewritten) >= summary.outcomes.size / 10, summary.text)
  }

  private val WindowCases = total("SKEWAGG_FUZZ_WINDOW_CASES", 60)

  test(
    s"${slice.describe(WindowCases, 10)} random window cases of seed $Seed: skewagg never " +
      "changes a result") {
    val summary = passing(WindowCases, 10, FuzzGenerator.window)
    val outcomes = summary.outcomes
    assert(outcomes.count(_.rewritten) >= outcomes.size / 10, summary.text)
    // Chains of windows on the same keys (the cases with a window named c0) split too, and
    // windows without PARTITION BY (the whole table one partition): on every build, with the
    // corpus's first such case that is rewritten if the build's slice has none.
    def chain(c: FuzzCase) = c.query.contains(" AS c0")
    def global(c: FuzzCase) = !c.query.contains("PARTITION BY")
    for ((kind, isKind, first) <- Seq(
        ("chains of windows", chain _, FirstRewrittenChain),
        ("global windows", global _, FirstRewrittenGlobal))) {
      val ofKind = outcomes.filter(o => isKind(o.fuzzCase))
      info(s"${ofKind.count(_.rewritten)} of ${ofKind.size} $kind rewritten")
      if (!ofKind.exists(_.rewritten)) {
        witness(FuzzGenerator.window(Seed, first), isKind, _.rewritten, s"rewritten $kind")
      }
    }
  }

  // The corpus's first cases of kinds a build's slice may lack, found by running their
  // candidates in index order (Spark 4.3 and 3.5): to find again if the generator changes.
  private val FirstRewrittenChain = 2
  private val FirstRewrittenGlobal = 20
  private val FirstSplitOptimizerWindow = 7
  private val FirstTwoLevelMerge = 4

  /**
   * `c`, the corpus's first case of a kind (`isKind`) whose outcome `shows` it, run as the
   * slice's are: it must pass and show it, on every build.
   */
  private def witness(
      c: FuzzCase,
      isKind: FuzzCase => Boolean,
      shows: FuzzOutcome => Boolean,
      what: String): Unit = {
    assert(isKind(c), s"case ${c.index} is not of its kind: find the corpus's first $what")
    spark.sparkContext.setLogLevel("OFF")
    val outcome =
      try FuzzRunner.run(spark, c)
      finally spark.sparkContext.setLogLevel("WARN")
    outcome.failure.foreach(failure => fail(s"\n$failure\n${c.repro}"))
    assert(shows(outcome), s"case ${c.index}, the corpus's first of the $what, is not: ${c.repro}")
  }

  private val OptimizerWindowCases = total("SKEWAGG_FUZZ_OPTIMIZER_WINDOW_CASES", 60)

  test(
    s"${slice.describe(OptimizerWindowCases, 10)} random cases of windows the optimizer builds, " +
      s"seed $Seed: skewagg never changes a result") {
    val summary = passing(OptimizerWindowCases, 10, FuzzGenerator.optimizerWindow)
    // Most of these windows keep Spark's plan (docs/window.md); some are split: on every build,
    // with the corpus's first split case if the build's slice has none.
    def splits(o: FuzzOutcome) = o.rewrites.contains("SplitSkewedWindow")
    val split = summary.outcomes.count(splits)
    info(s"$split of ${summary.outcomes.size} cases with a split window")
    if (split == 0) {
      witness(
        FuzzGenerator.optimizerWindow(Seed, FirstSplitOptimizerWindow),
        _ => true,
        splits,
        "cases with a split window")
    }
  }

  private val FewKeysCases = total("SKEWAGG_FUZZ_FEW_KEYS_CASES", 20)

  test(
    s"${slice.describe(FewKeysCases, 4)} random cases of heavy partial states over few keys, " +
      s"seed $Seed: skewagg never changes a result") {
    val summary = passing(FewKeysCases, 4, FuzzGenerator.fewKeys)
    // Some merge their states in two levels: on every build, with the corpus's first such case
    // if the build's slice has none.
    def inTwoLevels(o: FuzzOutcome) = o.rewrites.contains("SplitMergeOfPartialStates")
    info(s"${summary.outcomes.count(inTwoLevels)} of ${summary.outcomes.size} merged in two levels")
    if (!summary.outcomes.exists(inTwoLevels)) {
      witness(
        FuzzGenerator.fewKeys(Seed, FirstTwoLevelMerge),
        _ => true,
        inTwoLevels,
        "cases merged in two levels")
    }
  }

  test("the cases longer fuzz runs failed on pass (docs/testing.md, bugs found)") {
    val found = Seq(1L -> 135, 5L -> 293, 5L -> 367, 5L -> 4410)
    spark.sparkContext.setLogLevel("OFF")
    val outcomes =
      try found.map { case (seed, i) => FuzzRunner.run(spark, FuzzGenerator.generate(seed, i)) }
      finally spark.sparkContext.setLogLevel("WARN")
    val failed = outcomes.filter(_.failure.isDefined)
    assert(failed.isEmpty, failed.map(o => s"\n${o.failure.get}\n${o.fuzzCase.repro}").mkString)
  }

  test("a case is a pure function of seed and index, and its reproduction is self-contained") {
    val a = FuzzGenerator.generate(7, 3)
    assert(a == FuzzGenerator.generate(7, 3))
    assert(a.repro.contains(a.query) && a.setup.forall(a.repro.contains))
    assert(a.repro.contains("SET spark.skewagg.enabled=false;"))
  }
}
