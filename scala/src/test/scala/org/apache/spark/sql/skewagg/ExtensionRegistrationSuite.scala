package org.apache.spark.sql.skewagg

import java.nio.file.Files

import scala.jdk.CollectionConverters._

import io.skewagg.{BuildInfo, SkewAggVersionFunction}
import io.skewagg.functions.{ExplainFunction, PlanDriverRows, SkewTestFunctions, TaskTimesFunction}

import org.apache.spark.SPARK_VERSION

class ExtensionRegistrationSuite extends SkewAggSuiteBase {

  test("skewagg_version() names the loaded build, which matches the running Spark line") {
    val version = spark.sql("SELECT skewagg_version()").head().getString(0)
    assert(version == BuildInfo.describe)
    assert(BuildInfo.sparkLine == BuildInfo.lineOf(SPARK_VERSION))
    assert(version.contains(s"Spark ${BuildInfo.lineOf(SPARK_VERSION)}"))
  }

  test("skewagg_version() with arguments is a clear error") {
    val e = intercept[Exception](spark.sql("SELECT skewagg_version(1)").collect())
    assert(e.getMessage.contains("skewagg_version() takes no arguments"), e.getMessage)
  }

  /** The names of the skewagg steps among `registered`: the steps their guards wrap. */
  private def steps(registered: Seq[AnyRef]): Seq[String] = registered.collect {
    case guard: PlanningFallback.Guarded => guard.wrapped.getClass.getSimpleName
    case PlanDriverRows => "PlanDriverRows"
  }

  test("every planner strategy and adaptive rule is registered in the session, in its order") {
    val state = SessionStates.of(spark)
    // Registered guarded (PlanningFallback): the guard wraps the step.
    assert(
      steps(state.planner.strategies) == Seq(
        "PlanDriverRows",
        "LocalAggregateBeforeJoin",
        "PlanPartialAggregates",
        "PartialAggregateBeforeRepartition",
        "PlanHolisticAggregatesSortBased"))
    assert(
      steps(state.adaptiveRulesHolder.queryStagePrepRules) == Seq(
        "BroadcastJoinBelowLocalAggregate",
        "SplitSkewedShuffleBelowAggregate",
        "SplitSkewedJoinBelowAggregate",
        "SplitSkewedBucketsBelowAggregate",
        "SplitMergeOfPartialStates",
        "SplitSkewedWindow",
        "LeftAloneReasons"))
    assert(
      steps(state.adaptiveRulesHolder.queryStageOptimizerRules) == Seq(
        "CoalescePartialResultExchanges",
        "DropUnneededMergeAfterShuffle"))
  }

  test("every analysis rule, check, columnar rule and function is registered in the session") {
    val state = SessionStates.of(spark)
    assert(steps(LineFeatures.hintResolutionRules(state)) == Seq("ResolveSkewAggHints"))
    assert(steps(state.analyzer.postHocResolutionRules) == Seq("RestoreSkewAggHints"))
    assert(
      steps(state.analyzer.extendedCheckRules) ==
        Seq("CheckSkewAggHints", "WarnUnknownSkewAggSettings"))
    // Before columnar transitions: the rules that also run without adaptive execution.
    assert(
      steps(state.columnarRules) == Seq(
        "SplitSkewedBucketsBelowAggregate",
        "SplitSkewedWindow",
        "LeftAloneReasons"))
    val functions = Seq(
      SkewAggVersionFunction.name,
      SkewTestFunctions.skewTestName,
      SkewTestFunctions.taskSlotsName)
    for (name <- functions) {
      assert(state.catalog.lookupBuiltinOrTempFunction(name).isDefined, name)
    }
    for (name <- Seq(ExplainFunction.name, TaskTimesFunction.name)) {
      assert(state.catalog.lookupBuiltinOrTempTableFunction(name).isDefined, name)
    }
  }

  test("a jar built for another Spark line refuses to start, saying which jar to use") {
    BuildInfo.requireCompatibleSpark(BuildInfo.sparkLine + ".99")
    val other = BuildInfo.supportedLines.filterNot(_ == BuildInfo.sparkLine).head
    val e = intercept[IllegalStateException](BuildInfo.requireCompatibleSpark(s"$other.1"))
    assert(e.getMessage.contains(s"for Spark ${BuildInfo.sparkLine}"), e.getMessage)
    assert(e.getMessage.contains(s"cannot run on Spark $other.1"), e.getMessage)
    assert(e.getMessage.contains(s"built for Spark $other, skewagg-spark${other}_"), e.getMessage)
  }

  test("a Spark line skewagg has no jar for is refused, naming the supported lines") {
    val rows = Files.readAllLines(GenerateConfigDocs.projectRoot.resolve("build/spark-lines"))
    val lines = rows.asScala.toSeq.map(_.trim).filterNot(r => r.isEmpty || r.startsWith("#"))
      .map(_.split("\\s+").head)
    assert(BuildInfo.supportedLines == lines)
    for (unsupported <- Seq("3.4.4", "4.4.0")) {
      val e = intercept[IllegalStateException](BuildInfo.requireCompatibleSpark(unsupported))
      assert(e.getMessage.contains(s"cannot run on Spark $unsupported"), e.getMessage)
      assert(
        e.getMessage.contains(s"has no jar for Spark ${unsupported.take(3)}: it supports " +
          s"Spark ${lines.mkString(", ")}"),
        e.getMessage)
      assert(!e.getMessage.contains("built for Spark " + unsupported.take(3)), e.getMessage)
    }
  }

  test("an invalid value for a skewagg config is rejected when set, naming the key") {
    val e = intercept[IllegalArgumentException](spark.conf.set(SkewAggConf.ENABLED.key, "maybe"))
    assert(e.getMessage.contains(SkewAggConf.ENABLED.key), e.getMessage)
    assert(spark.conf.get(SkewAggConf.ENABLED.key) == "true")
  }
}
