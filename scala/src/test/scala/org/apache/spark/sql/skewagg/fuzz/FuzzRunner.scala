package org.apache.spark.sql.skewagg.fuzz

import scala.util.control.NonFatal

import org.apache.spark.SparkThrowable
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec
import org.apache.spark.sql.skewagg.{
  ConfScopes, LineFeatures, PlanNodes, PlanningFallback, PlanShape, RecordedContradictions,
  RowComparison
}
import org.apache.spark.sql.skewagg.{SharedSkewAggSession, SkewAggConf}
import org.apache.spark.sql.skewagg.localagg.PartialAggregateBeforeRepartition
import org.apache.spark.sql.skewagg.skewsplit.{
  SplitMergeOfPartialStates, SplitSkewedBucketsBelowAggregate, SplitSkewedJoinBelowAggregate,
  SplitSkewedShuffleBelowAggregate
}

/**
 * What running one case found: a failure, the skewagg rewrites in its plan (names of
 * [[FuzzRunner.Rewrites]]), and the error both runs failed with, if any.
 */
case class FuzzOutcome(
    fuzzCase: FuzzCase,
    failure: Option[String],
    rewrites: Set[String],
    error: Option[String]) {
  def rewritten: Boolean = rewrites.nonEmpty
}

/**
 * One run of a case's query: its rows (or its error's condition) and executed plan when it ran,
 * and the shape of its plan before adaptive execution changed it (or the error planning failed
 * with).
 */
private case class Attempt(
    result: Either[String, Seq[Row]],
    plan: Option[SparkPlan],
    initialShape: Either[String, String]) {

  /** The executed plan's shape, or the error the query failed with. */
  def executedShape: String =
    plan.map(PlanShape.of).getOrElse(s"failed: ${result.left.getOrElse("not run")}")
}

/**
 * Runs [[FuzzCase]]s: each with skewagg on, then switched off at run time in the same session,
 * under the case's settings, comparing the rows (any order, floating point with a relative
 * tolerance) or, when the query fails, the error condition (an overflow under ANSI must fail both
 * ways). Also a failure: a skewagg planning step that fell back ([[PlanningFallback]]); a plan
 * that records a rewrite beside its refusal ([[RecordedContradictions]]); a case
 * skewagg left alone whose plan with skewagg on differs from vanilla Spark's (a session without
 * the extension); and the kill switch: a plan with skewagg switched off that is not vanilla's
 * (compared before adaptive execution, and as executed for every [[ExecuteEvery]]-th case and
 * every case skewagg left alone).
 */
object FuzzRunner {

  /** Every this-many-th case runs in vanilla Spark too, so the kill switch's run-time plans of
   * rewritten cases are compared as well. */
  val ExecuteEvery = 5

  def run(
      spark: SparkSession,
      c: FuzzCase,
      vanilla: SparkSession = SharedSkewAggSession.vanilla): FuzzOutcome = {
    val fallbacksBefore = PlanningFallback.count
    val ((on, off), parsed) = withCase(spark, c) {
      val on = attempt(spark, c.query, Some(true), execute = true)
      (on, attempt(spark, c.query, Some(false), execute = true))
    }
    val rewrites = on.plan.map(rewritesIn).getOrElse(Set.empty)
    val executeVanilla = rewrites.isEmpty || c.index % ExecuteEvery == 0
    val (expected, _) =
      withCase(vanilla, c, parsed)(attempt(vanilla, c.query, None, executeVanilla))
    val failure = ((off.result, on.result) match {
      case (Right(expected), Right(actual)) => RowComparison.difference(expected, actual)
      case (Left(e1), Left(e2)) if e1 == e2 => None
      case (Left(e1), Left(e2)) => Some(s"skewagg off failed with $e1, on with $e2")
      case (Left(e), Right(_)) => Some(s"skewagg off failed with $e, on returned rows")
      case (Right(_), Left(e)) => Some(s"skewagg on failed with $e, off returned rows")
    }).orElse {
      if (PlanningFallback.count == fallbacksBefore) None
      else Some(s"a skewagg planning step fell back: ${PlanningFallback.last}")
    }.orElse {
      on.plan.map(RecordedContradictions.in).filter(_.nonEmpty)
        .map(c => s"a rewrite and its refusal recorded about one aggregate: ${c.mkString("; ")}")
    }.orElse {
      on.plan.filter(p => rewrites.isEmpty && !emptied(p)).flatMap { plan =>
        val actual = PlanShape.withoutHints(PlanShape.of(plan))
        expected.plan.map(PlanShape.of).filterNot(PlanShape.sameUpToOrder(actual, _)).map { e =>
          s"skewagg left the query alone but planned it other than vanilla Spark:\n$actual\n" +
            s"vanilla:\n$e"
        }
      }
    }.orElse(switchedOffDifference(off, expected, executeVanilla))
    FuzzOutcome(c, failure, rewrites, off.result.left.toOption)
  }

  /**
   * With `spark.skewagg.enabled=false` set after the query ran with skewagg on, the plan must be
   * vanilla Spark's: before adaptive execution, and as executed when vanilla's ran (unless
   * adaptive execution [[emptied]] either: its plan prints logical plans, skewagg's hints too).
   */
  private def switchedOffDifference(
      off: Attempt,
      vanilla: Attempt,
      executed: Boolean): Option[String] = {
    val compareExecuted = executed && !(off.plan ++ vanilla.plan).exists(emptied)
    val (actual, expected) =
      if (compareExecuted) (off.executedShape, vanilla.executedShape)
      else (off.initialShape.merge, vanilla.initialShape.merge)
    if (PlanShape.sameUpToOrder(actual, expected) && !SkewAggOperators.exists(actual.contains)) {
      None
    } else {
      val which = if (compareExecuted) "executed" else "planned"
      Some(s"switched off, skewagg $which the query other than vanilla Spark:\n$actual\n" +
        s"vanilla:\n$expected")
    }
  }

  /**
   * `body` with the case's settings and tables in `spark` (its views from `parsed`, as another
   * session parsed them); restored and dropped afterwards. Returns the views as parsed too.
   */
  private def withCase[T](
      spark: SparkSession,
      c: FuzzCase,
      parsed: Map[String, LogicalPlan] = Map.empty)(body: => T): (T, Map[String, LogicalPlan]) = {
    val conf = spark.conf
    ConfScopes.restoring(conf, c.conf.map(_._1) :+ SkewAggConf.ENABLED.key) {
      try {
        c.conf.foreach { case (k, v) => conf.set(k, v) }
        val views = c.setUp(spark, parsed)
        (body, views)
      } finally {
        c.cleanup.foreach(s =>
          try spark.sql(s)
          catch { case NonFatal(_) => })
      }
    }
  }

  /**
   * Adaptive execution replaced the query by an empty result (`EmptyRelation`). Its plan prints
   * the logical plan with the query stages that had been created when adaptive execution
   * noticed, so it is not compared with vanilla's (Spark 4.3, seed 20261121 case 41: no skewagg
   * operator anywhere, skewagg's plan printed its finished stages, vanilla's the local
   * relations; the cause was not found).
   */
  private def emptied(plan: SparkPlan): Boolean =
    PlanNodes.all(plan).exists(LineFeatures.emptyRelation)

  /**
   * Plans `sql` with skewagg `on` (None: a session without skewagg), and runs it when `execute`.
   */
  private def attempt(
      spark: SparkSession,
      sql: String,
      on: Option[Boolean],
      execute: Boolean): Attempt = {
    on.foreach(o => spark.conf.set(SkewAggConf.ENABLED.key, o.toString))
    val planned =
      try {
        val df = spark.sql(sql)
        Right((df, df.queryExecution.executedPlan))
      } catch {
        case NonFatal(e) => Left(condition(e))
      }
    val initialShape = planned.map {
      case (_, a: AdaptiveSparkPlanExec) => PlanShape.of(a.initialPlan)
      case (_, p) => PlanShape.of(p)
    }.left.map(e => s"failed: $e")
    planned match {
      case Left(e) => Attempt(Left(e), None, initialShape)
      case Right(_) if !execute => Attempt(Left("not run"), None, initialShape)
      case Right((df, executed)) =>
        try {
          val rows = df.collect().toSeq
          val plan = executed match {
            case a: AdaptiveSparkPlanExec => a.executedPlan
            case p => p
          }
          Attempt(Right(rows), Some(plan), initialShape)
        } catch {
          case NonFatal(e) => Attempt(Left(condition(e)), None, initialShape)
        }
    }
  }

  /**
   * The rewrites, named by the rule that makes them, and the text each leaves in an executed
   * plan (the name of its operator, or its SkewAggLocalStage marker).
   */
  val Rewrites: Seq[(String, String)] = Seq(
    "LocalAggregateBeforeJoin" -> "before the join",
    "PartialAggregateBeforeRepartition" -> PartialAggregateBeforeRepartition.Rewrite,
    "SplitSkewedJoinBelowAggregate" -> SplitSkewedJoinBelowAggregate.Rewrite,
    "SplitSkewedShuffleBelowAggregate" -> SplitSkewedShuffleBelowAggregate.Rewrite,
    "SplitSkewedBucketsBelowAggregate" -> SplitSkewedBucketsBelowAggregate.Rewrite,
    "SplitMergeOfPartialStates" -> SplitMergeOfPartialStates.Rewrite,
    "PlanHolisticAggregatesSortBased" -> "SingleKeyAggregate",
    "PlanHolisticAggregatesSortBased" -> "HotKeySplitAggregate",
    "SplitSkewedWindow" -> "HotKeySplitWindow")

  /**
   * Read from every node, those below reused exchanges included: adaptive execution reuses a
   * running stage when it plans a rewritten aggregate again (docs/testing.md, seed 4 case 3).
   */
  private def rewritesIn(plan: SparkPlan): Set[String] = {
    val text = PlanNodes.all(plan).map(_.verboseString(Int.MaxValue)).mkString("\n")
    Rewrites.collect { case (rule, marker) if text.contains(marker) => rule }.toSet
  }

  /** Names that appear in an executed plan only when a skewagg rewrite happened. */
  val SkewAggOperators: Seq[String] =
    Seq(
      "SkewAggLocalStage",
      "FlushingPartialAggregate",
      "SingleKeyAggregate",
      "HotKeySplitAggregate",
      "HotKeySplitWindow")

  private def condition(e: Throwable): String = {
    val root = Iterator.iterate(e)(_.getCause).takeWhile(_ != null).collectFirst {
      case t: SparkThrowable if LineFeatures.errorCondition(t) != null =>
        LineFeatures.errorCondition(t)
    }
    root.getOrElse(e.getClass.getName)
  }

  /** The generators `make fuzz` runs, by `--kind`. */
  val Kinds: Map[String, (Long, Int) => FuzzCase] = Map(
    "aggregate" -> FuzzGenerator.generate,
    "window" -> FuzzGenerator.window,
    "optimizer-window" -> FuzzGenerator.optimizerWindow,
    "few-keys" -> FuzzGenerator.fewKeys)

  /**
   * `make fuzz`: `--seed S --cases N [--from I] [--kind K]` ([[Kinds]], default aggregate).
   * Prints a reproduction of each failing case and a summary; exits 1 if any case failed.
   */
  def main(args: Array[String]): Unit = {
    val options = args.grouped(2).collect { case Array(k, v) => k.stripPrefix("--") -> v }.toMap
    val seed = options.getOrElse("seed", "1").toLong
    val cases = options.getOrElse("cases", "200").toInt
    val from = options.getOrElse("from", "0").toInt
    val kind = options.getOrElse("kind", "aggregate")
    val generate = Kinds.getOrElse(
      kind,
      throw new IllegalArgumentException(
        s"--kind $kind is not a fuzz generator; use one of " +
          Kinds.keys.toSeq.sorted.mkString(", ")))
    val spark = SharedSkewAggSession.spark
    spark.sparkContext.setLogLevel("OFF") // expected failures (ANSI overflow) log stack traces
    val started = System.nanoTime()
    val outcomes = (from until from + cases).map { i =>
      val outcome = run(spark, generate(seed, i))
      outcome.failure.foreach { f =>
        println(s"\nFAILED case $i of seed $seed: $f\n${outcome.fuzzCase.repro}\n")
      }
      if ((i - from + 1) % 50 == 0) {
        val seconds = (System.nanoTime() - started) / 1e9
        println(f"... ${i - from + 1} of $cases cases run in $seconds%.0f s")
      }
      outcome
    }
    val seconds = (System.nanoTime() - started) / 1e9
    println(FuzzSummary(outcomes).text + f" ($seconds%.0f s)")
    spark.stop()
    if (outcomes.exists(_.failure.isDefined)) sys.exit(1)
  }
}

case class FuzzSummary(outcomes: Seq[FuzzOutcome]) {
  def failed: Seq[FuzzOutcome] = outcomes.filter(_.failure.isDefined)

  /** One line: the cases run, failed and rewritten, by shape and by rule. */
  def text: String = {
    val (seed, from) = outcomes.headOption.map(o => (o.fuzzCase.seed, o.fuzzCase.index))
      .getOrElse((0L, 0))
    val rewritten = outcomes.count(_.rewritten)
    val errors = outcomes.count(_.error.isDefined)
    val bySource = outcomes.groupBy(_.fuzzCase.shape).toSeq.sortBy(_._1)
      .map { case (k, os) => s"$k ${os.count(_.rewritten)}/${os.size}" }.mkString(", ")
    val byRule = FuzzRunner.Rewrites.map { case (rule, _) =>
      s"$rule ${outcomes.count(_.rewrites.contains(rule))}"
    }.mkString(", ")
    s"fuzz seed $seed, cases $from-${from + outcomes.size - 1}: ${outcomes.size} run, " +
      s"${failed.size} failed, $rewritten rewritten by skewagg ($bySource; by rule: $byRule), " +
      s"$errors failing both ways (e.g. ANSI overflow)"
  }
}
