package org.apache.spark.sql.skewagg.fuzz

import org.apache.spark.sql.skewagg.SkewAggSuiteBase

/**
 * The fixed-seed slice of the randomized differential tests that CI runs: every case with
 * skewagg off and on must give the same rows (or the same error). `make fuzz` runs any number of
 * cases of any seed.
 */
class FuzzSuite extends SkewAggSuiteBase {
  private val Seed = 20261121L
  private val Cases = sys.env.get("SKEWAGG_FUZZ_CASES").map(_.toInt).getOrElse(200)

  /** Cases 0 until `cases` of `generate` with seed [[Seed]]: none failed; their summary. */
  private def passing(cases: Int, generate: (Long, Int) => FuzzCase): FuzzSummary = {
    // Expected failures (ANSI overflow both ways) would fill the log with stack traces.
    spark.sparkContext.setLogLevel("OFF")
    val outcomes =
      try (0 until cases).map(i => FuzzRunner.run(spark, generate(Seed, i)))
      finally spark.sparkContext.setLogLevel("WARN")
    val summary = FuzzSummary(outcomes)
    info(summary.text(Seed, 0))
    assert(
      summary.failed.isEmpty,
      summary.failed.map(o => s"\n${o.failure.get}\n${o.fuzzCase.repro}").mkString("\n"))
    summary
  }

  test(s"$Cases random cases of seed $Seed: skewagg never changes a result") {
    val summary = passing(Cases, FuzzGenerator.generate)
    // The slice must exercise the rewrites, or it proves nothing.
    assert(summary.outcomes.count(_.rewritten) >= Cases / 10, summary.text(Seed, 0))
  }

  private val WindowCases = sys.env.get("SKEWAGG_FUZZ_WINDOW_CASES").map(_.toInt).getOrElse(60)

  test(s"$WindowCases random window cases of seed $Seed: skewagg never changes a result") {
    val summary = passing(WindowCases, FuzzGenerator.window)
    val outcomes = summary.outcomes
    assert(outcomes.count(_.rewritten) >= WindowCases / 10, summary.text(Seed, 0))
    // Chains of windows on the same keys (the cases with a window named c0) split too.
    val chains = outcomes.filter(_.fuzzCase.query.contains(" AS c0"))
    info(s"${chains.count(_.rewritten)} of ${chains.size} chains of windows rewritten")
    assert(chains.exists(_.rewritten), summary.text(Seed, 0))
  }

  private val OptimizerWindowCases =
    sys.env.get("SKEWAGG_FUZZ_OPTIMIZER_WINDOW_CASES").map(_.toInt).getOrElse(60)

  test(
    s"$OptimizerWindowCases random cases of windows the optimizer builds, seed $Seed: skewagg " +
      "never changes a result") {
    val summary = passing(OptimizerWindowCases, FuzzGenerator.optimizerWindow)
    // Most of these windows keep Spark's plan (docs/window.md); some are split.
    assert(
      summary.outcomes.exists(_.rewrites.contains("SplitSkewedWindow")),
      summary.text(Seed, 0))
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
