package org.apache.spark.sql.skewagg

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.{SQLConf, StaticSQLConf}

import io.skewagg.WarnUnknownSkewAggSettings

/**
 * Bad input: invalid config values (every entry, every way of setting it), unknown
 * `spark.skewagg.*` keys, and skewagg listed twice in `spark.sql.extensions`. Hints are covered
 * by tests/test_hints.py; docs/bad-input.md lists what the user sees for each.
 */
class BadInputSuite extends SkewAggSuiteBase {

  private def rejected(key: String, value: String)(set: => Unit): IllegalArgumentException = {
    val before = spark.conf.getOption(key)
    val e = intercept[IllegalArgumentException](set)
    assert(e.getMessage == SkewAggConf.invalidValueMessage(key, value), e.getMessage)
    assert(
      e.getMessage.contains(key) &&
        e.getMessage.contains(SkewAggConf.validValues(SkewAggConf.entries.find(_.key == key).get)
          .description),
      e.getMessage)
    assert(spark.conf.getOption(key) == before, s"$key changed to a rejected value")
    e
  }

  for (entry <- SkewAggConf.entries) {
    val valid = SkewAggConf.validValues(entry)
    test(s"${entry.key}: invalid values are rejected when set, naming the key and valid values") {
      assert(valid.invalidExamples.nonEmpty)
      for (value <- valid.invalidExamples) {
        rejected(entry.key, value)(spark.conf.set(entry.key, value))
        // SQL SET goes through the same check.
        rejected(entry.key, value)(spark.sql(s"SET ${entry.key}=$value"))
      }
      // The default is valid, and so is setting it explicitly.
      withSQLConf(entry.key -> entry.defaultValueString) {
        assert(spark.conf.get(entry.key) == entry.defaultValueString)
      }
    }
  }

  test("the session builder's config of an existing session is checked too") {
    val key = SkewAggConf.SKEW_FACTOR.key
    rejected(key, "0.5")(SparkSession.builder().config(key, "0.5").getOrCreate())
  }

  test("a spark.skewagg.* key that is no setting is found, with the closest setting named") {
    val typo = "spark.skewagg.skew.facter"
    withSQLConf(typo -> "3") {
      assert(WarnUnknownSkewAggSettings.unknownKeys(SessionStates.of(spark).conf) ==
        Seq(typo))
      assert(WarnUnknownSkewAggSettings.message(typo) ==
        "spark.skewagg.skew.facter is not a skewagg setting and has no effect; did you mean " +
        "spark.skewagg.skew.factor? The settings are listed in docs/configs.md.")
      // A warning, not an error: queries still run.
      assert(spark.range(10).groupBy((col("id") % 3).as("k")).count().collect().length == 3)
    }
    assert(WarnUnknownSkewAggSettings.unknownKeys(SessionStates.of(spark).conf).isEmpty)
  }

  /** A session on the shared SparkContext with `spark.sql.extensions` set to `extensions`. */
  private def sessionWithExtensions(extensions: String): SparkSession =
    ConfScopes.withSparkConf(
      spark.sparkContext.conf,
      StaticSQLConf.SPARK_SESSION_EXTENSIONS.key -> Some(extensions))(
      NewSessions.on(spark.sparkContext))

  private def fact(s: SparkSession): DataFrame =
    s.range(0, 3000).select((col("id") % 17).as("k"), col("id").cast("double").as("v"))

  test("skewagg listed twice in spark.sql.extensions registers every rule once") {
    val once = sessionWithExtensions("io.skewagg.SkewAggExtensions")
    val twice = sessionWithExtensions("io.skewagg.SkewAggExtensions,io.skewagg.SkewAggExtensions")
    // (phase, rule): a rule may run in two phases (under adaptive execution and before columnar
    // transitions), each once.
    def skewaggRules(s: SparkSession): Seq[(String, String)] = {
      val state = SessionStates.of(s)
      val phases: Seq[(String, Seq[AnyRef])] = Seq(
        "strategies" -> state.planner.strategies,
        "checks" -> state.analyzer.extendedCheckRules,
        "query-stage preparation" -> state.adaptiveRulesHolder.queryStagePrepRules,
        "query-stage optimization" -> state.adaptiveRulesHolder.queryStageOptimizerRules,
        "columnar" -> state.columnarRules)
      for {
        (phase, steps) <- phases
        step <- steps
        name = (step match {
          case guard: PlanningFallback.Guarded => guard.wrapped // registered guarded
          case other => other
        }).getClass.getName
        if name.startsWith("org.apache.spark.sql.skewagg.")
      } yield phase -> name
    }
    assert(skewaggRules(once).map(_._1).distinct.size == 5) // (a rule in every phase)
    assert(skewaggRules(twice) == skewaggRules(once))
    assert(skewaggRules(twice).distinct == skewaggRules(twice))

    val queries: Seq[SparkSession => DataFrame] = Seq(
      s => fact(s).repartition(col("k")).groupBy("k").agg(sum("v"), count("*")),
      s =>
        fact(s).join(fact(s).select(col("k"), col("v").as("w")), "k").groupBy("k")
          .agg(sum("v")),
      s => fact(s).groupBy("k").agg(percentile(col("v"), lit(0.5))))
    for (s <- Seq(once, twice); adaptive <- Seq("false", "true")) {
      s.conf.set(SQLConf.ADAPTIVE_EXECUTION_ENABLED.key, adaptive)
      s.conf.set(SQLConf.AUTO_BROADCASTJOIN_THRESHOLD.key, "-1")
    }
    for (query <- queries; adaptive <- Seq("false", "true")) {
      Seq(once, twice).foreach(_.conf.set(SQLConf.ADAPTIVE_EXECUTION_ENABLED.key, adaptive))
      val (expected, actual) = (query(once), query(twice))
      assert(RowComparison.difference(expected.collect().toSeq, actual.collect().toSeq).isEmpty)
      val (plan, doubledPlan) = (executedPlan(expected), executedPlan(actual))
      assert(shape(plan) == shape(doubledPlan), s"\nonce:\n$plan\ntwice:\n$doubledPlan")
      assert(Seq("SkewAgg", "SingleKey", "HotKeySplit").exists(plan.toString.contains), plan)
    }
  }
}
