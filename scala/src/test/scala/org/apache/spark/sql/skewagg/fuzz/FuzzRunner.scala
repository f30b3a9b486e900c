package org.apache.spark.sql.skewagg.fuzz

import scala.util.control.NonFatal

import org.apache.spark.SparkThrowable
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec
import org.apache.spark.sql.skewagg.{RowComparison, SharedSkewAggSession}

/** What running one case found. */
case class FuzzOutcome(fuzzCase: FuzzCase, failure: Option[String], rewritten: Boolean,
    error: Option[String])

/**
 * Runs [[FuzzCase]]s: each with skewagg off and on under the case's settings, comparing the
 * rows (any order, floating point with a relative tolerance) or, when the query fails, the
 * error condition (an overflow under ANSI must fail both ways).
 */
object FuzzRunner {

  def run(spark: SparkSession, c: FuzzCase): FuzzOutcome = {
    val conf = spark.conf
    val keys = c.conf.map(_._1) :+ "spark.skewagg.enabled"
    val saved = keys.map(k => k -> conf.getOption(k))
    try {
      c.conf.foreach { case (k, v) => conf.set(k, v) }
      c.setup.foreach(spark.sql)
      val off = attempt(spark, c.query, on = false)
      val on = attempt(spark, c.query, on = true)
      val failure = (off, on) match {
        case (Right((expected, _)), Right((actual, _))) =>
          RowComparison.difference(expected, actual)
        case (Left(e1), Left(e2)) if e1 == e2 => None
        case (Left(e1), Left(e2)) => Some(s"skewagg off failed with $e1, on with $e2")
        case (Left(e), Right(_)) => Some(s"skewagg off failed with $e, on returned rows")
        case (Right(_), Left(e)) => Some(s"skewagg on failed with $e, off returned rows")
      }
      val rewritten = on.exists(_._2)
      FuzzOutcome(c, failure, rewritten, off.left.toOption)
    } finally {
      c.cleanup.foreach(s => try spark.sql(s) catch { case NonFatal(_) => })
      saved.foreach {
        case (k, Some(v)) => conf.set(k, v)
        case (k, None) => conf.unset(k)
      }
    }
  }

  /** Rows and whether a skewagg operator is in the executed plan, or the error's condition. */
  private def attempt(spark: SparkSession, sql: String, on: Boolean)
      : Either[String, (Seq[Row], Boolean)] = {
    spark.conf.set("spark.skewagg.enabled", on.toString)
    try {
      val df = spark.sql(sql)
      val rows = df.collect().toSeq
      val plan = df.queryExecution.executedPlan match {
        case a: AdaptiveSparkPlanExec => a.executedPlan
        case p => p
      }
      val text = plan.treeString
      Right((rows, SkewAggOperators.exists(text.contains)))
    } catch {
      case NonFatal(e) => Left(condition(e))
    }
  }

  /** Names that appear in an executed plan only when a skewagg rewrite happened. */
  val SkewAggOperators: Seq[String] =
    Seq("SkewAggLocalStage", "FlushingPartialAggregate", "SingleKeyAggregate")

  private def condition(e: Throwable): String = {
    val root = Iterator.iterate(e)(_.getCause).takeWhile(_ != null).collectFirst {
      case t: SparkThrowable if t.getCondition != null => t.getCondition
    }
    root.getOrElse(e.getClass.getName)
  }

  /**
   * `make fuzz`: `--seed S --cases N [--from I]`. Prints a reproduction of each failing case and
   * a summary; exits 1 if any case failed.
   */
  def main(args: Array[String]): Unit = {
    val options = args.grouped(2).collect { case Array(k, v) => k.stripPrefix("--") -> v }.toMap
    val seed = options.getOrElse("seed", "1").toLong
    val cases = options.getOrElse("cases", "200").toInt
    val from = options.getOrElse("from", "0").toInt
    val spark = SharedSkewAggSession.spark
    spark.sparkContext.setLogLevel("OFF") // expected failures (ANSI overflow) log stack traces
    val outcomes = (from until from + cases).map { i =>
      val outcome = run(spark, FuzzGenerator.generate(seed, i))
      outcome.failure.foreach { f =>
        println(s"\nFAILED case $i of seed $seed: $f\n${outcome.fuzzCase.repro}\n")
      }
      if ((i - from + 1) % 50 == 0) println(s"... ${i - from + 1} of $cases cases run")
      outcome
    }
    println(FuzzSummary(outcomes).text(seed, from))
    spark.stop()
    if (outcomes.exists(_.failure.isDefined)) sys.exit(1)
  }
}

case class FuzzSummary(outcomes: Seq[FuzzOutcome]) {
  def failed: Seq[FuzzOutcome] = outcomes.filter(_.failure.isDefined)

  def text(seed: Long, from: Int): String = {
    val rewritten = outcomes.count(_.rewritten)
    val errors = outcomes.count(_.error.isDefined)
    val bySource = outcomes.groupBy(o => FuzzSummary.source(o.fuzzCase.query)).toSeq.sortBy(_._1)
      .map { case (k, os) => s"$k ${os.count(_.rewritten)}/${os.size}" }.mkString(", ")
    s"fuzz seed $seed, cases $from-${from + outcomes.size - 1}: ${outcomes.size} run, " +
      s"${failed.size} failed, $rewritten rewritten by skewagg ($bySource), $errors failing " +
      "both ways (e.g. ANSI overflow)"
  }
}

object FuzzSummary {
  /** The kind of input a case's query aggregates, for the summary. */
  def source(query: String): String =
    if (query.contains(" JOIN ")) "join"
    else if (query.contains("REPARTITION") || query.contains("DISTRIBUTE")) "repartition"
    else if (query.contains("FROM b1")) "bucketed"
    else "scan"
}
