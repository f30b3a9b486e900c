package org.apache.spark.sql.skewagg

import scala.util.chaining._

import org.scalactic.source.Position
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanExec, AdaptiveSparkPlanHelper}
import org.apache.spark.sql.execution.exchange.{ReusedExchangeExec, ShuffleExchangeLike}
import org.apache.spark.sql.internal.{SQLConf, StaticSQLConf}
import org.apache.spark.sql.skewagg.localagg.FlushingPartialAggregateExec
import org.apache.spark.util.Utils

/** One local session for every suite in the test JVM, with skewagg registered. */
object SharedSkewAggSession {
  lazy val spark: SparkSession = SparkSession.builder()
    .master("local[2]")
    .appName("skewagg-tests")
    .config(StaticSQLConf.SPARK_SESSION_EXTENSIONS.key, "io.skewagg.SkewAggExtensions")
    .config(SQLConf.SHUFFLE_PARTITIONS.key, "8")
    // What skewagg.configure() sets for PySpark: AQE's cost model that knows cheap exchanges.
    .config(SQLConf.ADAPTIVE_CUSTOM_COST_EVALUATOR_CLASS.key, "io.skewagg.SkewAggCostEvaluator")
    .config("spark.ui.enabled", "false")
    // Generated code that does not compile fails the test instead of running without codegen.
    .config(SQLConf.CODEGEN_FALLBACK.key, "false")
    // The four runs of a differential test, and the tests of a suite, generate much the same code:
    // kept compiled (Spark keeps 100 classes; docs/testing.md, "Where the time goes").
    .config(StaticSQLConf.CODEGEN_CACHE_MAX_ENTRIES.key, "2000")
    // Deleted when the test JVM exits (Spark's shutdown hook).
    .config("spark.sql.warehouse.dir", Utils.createTempDir(namePrefix = "skewagg-wh").toString)
    .getOrCreate()
    // `make test` runs every line's suites one line after another in one log: this names the line.
    .tap(s => println(s"== the test session runs Spark ${s.version}"))

  /** A session on the same SparkContext built without any extension: what vanilla Spark plans. */
  lazy val vanilla: SparkSession = ConfScopes.withSparkConf(
    spark.sparkContext.conf,
    StaticSQLConf.SPARK_SESSION_EXTENSIONS.key -> None)(NewSessions.on(spark.sparkContext))
}

/** The plans and rows of one query run with skewagg off and on, adaptive execution off and on. */
case class Differential(rows: Seq[Row], plans: Map[(Boolean, Boolean), SparkPlan]) {

  /**
   * The executed (for adaptive: final) plan with skewagg `on` and adaptive execution `adaptive`.
   */
  def plan(on: Boolean, adaptive: Boolean): SparkPlan = plans((on, adaptive))
}

trait SkewAggSuiteBase extends AnyFunSuite with AdaptiveSparkPlanHelper {

  protected def spark: SparkSession = SharedSkewAggSession.spark

  /**
   * The plan helpers (find, collect, ...) also read what a reused exchange reuses: adaptive
   * execution re-plans skewagg's rewrite of a join after a stage ran and reuses that stage, so the
   * rewritten side of the join can stand behind a ReusedExchange.
   */
  override protected def allChildren(p: SparkPlan): Seq[SparkPlan] = p match {
    case r: ReusedExchangeExec => Seq(r.child)
    case other => super.allChildren(other)
  }

  /** Runs `body` with the settings `pairs` (a null value unsets the key), then restores them. */
  protected def withSQLConf[T](pairs: (String, String)*)(body: => T): T =
    ConfScopes.withSession(spark.conf, pairs: _*)(body)

  /** The executed plan after the query ran; for adaptive queries the final plan. */
  protected def executedPlan(df: DataFrame): SparkPlan = df.queryExecution.executedPlan match {
    case a: AdaptiveSparkPlanExec => a.executedPlan
    case p => p
  }

  /**
   * Runs `query` with `spark.skewagg.enabled` false and true, each with adaptive execution off and
   * on, and fails unless all four give the same rows (any order; floating point compared with a
   * relative tolerance, as Spark's own aggregate tests do), or if a skewagg planning step fell
   * back to Spark's plan ([[PlanningFallback]]) without a test fault asking for it. Returns the
   * rows and the four plans.
   */
  protected def differential(query: SparkSession => DataFrame, conf: (String, String)*)(
      implicit pos: Position): Differential = runDifferential(query, conf, Seq(false, true), None)

  /**
   * [[differential]] for one of several variants of a query whose rows with skewagg off are those
   * of `vanilla` (the same query and data, run by [[differential]]): runs only skewagg on, with
   * adaptive execution off and on, and fails unless both give `vanilla`'s rows. Returns those
   * plans, and `vanilla`'s for skewagg off.
   */
  protected def differentialAgainst(
      vanilla: Differential,
      query: SparkSession => DataFrame,
      conf: (String, String)*)(implicit pos: Position): Differential =
    runDifferential(query, conf, Seq(true), Some(vanilla))

  private def runDifferential(
      query: SparkSession => DataFrame,
      conf: Seq[(String, String)],
      skewagg: Seq[Boolean],
      vanilla: Option[Differential])(implicit pos: Position): Differential = {
    val fallbacksBefore = PlanningFallback.count
    val runs = for {
      adaptive <- Seq(false, true)
      on <- skewagg
    } yield {
      withSQLConf(conf ++ Seq(
        SkewAggConf.ENABLED.key -> on.toString,
        SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> adaptive.toString): _*) {
        val df = query(spark)
        val rows = df.collect().toSeq
        ((on, adaptive), rows, executedPlan(df))
      }
    }
    val expected = vanilla.map(_.rows).getOrElse(runs.head._2)
    runs.drop(if (vanilla.isEmpty) 1 else 0).foreach { case ((on, adaptive), rows, plan) =>
      RowComparison.difference(expected, rows).foreach { diff =>
        fail(s"skewagg=$on adaptive=$adaptive changed the result: $diff\nplan:\n$plan")
      }
    }
    runs.foreach { case ((on, adaptive), _, plan) =>
      if (on) assertNoContradiction(plan, s"adaptive=$adaptive")
    }
    if (!conf.exists(_._1 == SkewAggConf.TEST_FAIL_RULE.key)) {
      assert(
        PlanningFallback.count == fallbacksBefore,
        s"a skewagg planning step fell back: ${PlanningFallback.last}")
    }
    Differential(
      expected,
      vanilla.map(_.plans).getOrElse(Map.empty) ++ runs.map { case (key, _, plan) => key -> plan })
  }

  /** Fails if `plan` records a rewrite beside its refusal ([[RecordedContradictions]]). */
  protected def assertNoContradiction(plan: SparkPlan, run: String)(implicit
      pos: Position): Unit = {
    val found = RecordedContradictions.in(plan)
    assert(
      found.isEmpty,
      s"($run) a rewrite and its refusal recorded about one aggregate: " +
        found.mkString("; ") + s"\nplan:\n$plan")
  }

  /** The plan's shape: [[PlanShape.of]]. */
  protected def shape(plan: SparkPlan): String = PlanShape.of(plan)

  /** The nodes of `plan` (through adaptive query stages) that are instances of `T`. */
  protected def nodes[T <: SparkPlan](plan: SparkPlan)(implicit
      tag: scala.reflect.ClassTag[T]): Seq[T] = collect(plan) { case p: T => p }

  /** The exchanges of `plan` hashing on exactly the columns `names`, in that order. */
  protected def exchangesOn(plan: SparkPlan, names: String*): Seq[ShuffleExchangeLike] =
    nodes[ShuffleExchangeLike](plan).filter(_.outputPartitioning match {
      case h: HashPartitioning => h.expressions.flatMap(_.references.map(_.name)) == names
      case _ => false
    })

  /** The flushing local aggregates in skewagg's plan of `d`. */
  protected def flushing(d: Differential, adaptive: Boolean): Seq[FlushingPartialAggregateExec] =
    nodes[FlushingPartialAggregateExec](d.plan(on = true, adaptive))
}

/** Order-insensitive row comparison with a relative tolerance for floating point values. */
object RowComparison {
  private val RelativeTolerance = 1e-9
  private val SortKeyDigits = new java.math.MathContext(7)

  def difference(expected: Seq[Row], actual: Seq[Row]): Option[String] = {
    if (expected.size != actual.size) {
      return Some(s"${expected.size} rows expected, ${actual.size} rows returned")
    }
    if (sameRows(expected, actual)) return None
    // Row by row within the tolerance, in the order they came (an ordered result, or two runs of
    // one plan): the same rows, without sorting them.
    if (expected.zip(actual).forall { case (x, y) => close(normalize(x), normalize(y)) }) {
      return None
    }
    val e = sorted(expected)
    val a = sorted(actual)
    e.zip(a).collectFirst {
      case (x, y) if !close(x, y) => s"expected row $x but got $y"
    }
  }

  /**
   * The same rows, as many times each, equal as normalized values (`==`: -0.0 equals 0.0, NaN
   * equals NaN). Equal rows compare equal there too, so this only saves the sort (most of the
   * comparison's time on results of many rows).
   */
  private def sameRows(expected: Seq[Row], actual: Seq[Row]): Boolean = {
    val counts = new java.util.HashMap[Seq[Any], Integer]()
    expected.foreach(r => counts.merge(normalize(r), 1, (a: Integer, b: Integer) => a + b))
    actual.forall { r =>
      val values = normalize(r)
      val left = counts.getOrDefault(values, 0) - 1
      if (left > 0) counts.put(values, left) else counts.remove(values)
      left >= 0
    }
  }

  /**
   * The normalized rows in the order of their sort keys, each key made once (`sortBy` would make
   * it again for every comparison).
   */
  private def sorted(rows: Seq[Row]): Seq[Seq[Any]] =
    rows.map { row =>
      val values = normalize(row); (sortKey(values), values)
    }
      .sortBy(_._1).map(_._2)

  /**
   * A NaN of a normalized row: equal to itself, which a NaN is not (as a map key each row holding
   * NaN would be a key of its own, all of one hash). Printed and sorted as NaN.
   */
  private case object NaNValue {
    override def toString: String = "NaN"
  }

  private def normalize(row: Row): Seq[Any] = row.toSeq.map {
    case r: Row => normalize(r)
    case s: scala.collection.Seq[_] => s.map {
        case r: Row => normalize(r); case d: Double if d.isNaN => NaNValue; case v => v
      }
    case a: Array[Byte] => a.toSeq
    case d: Double if d.isNaN => NaNValue
    case f: Float => if (f.isNaN) NaNValue else f.toDouble
    case v => v
  }

  private def sortKey(values: Seq[Any]): String = values.map {
    case d: Double if d.isInfinite => d.toString
    // 7 significant digits, as %.6e prints (without a Formatter's per-call locale lookups).
    case d: Double => new java.math.BigDecimal(d).round(SortKeyDigits).toString
    case null => "\u0000null"
    case v => v.toString
  }.mkString("\u0001")

  private def close(x: Any, y: Any): Boolean = (x, y) match {
    case (a: Double, b: Double) =>
      a == b ||
      math.abs(a - b) <= RelativeTolerance * math.max(math.abs(a), math.abs(b))
    // Arrays come back as mutable ArraySeqs: scala.collection.Seq, not the default immutable Seq.
    case (a: scala.collection.Seq[_], b: scala.collection.Seq[_]) =>
      a.size == b.size && a.zip(b).forall { case (p, q) => close(p, q) }
    case (a: java.math.BigDecimal, b: java.math.BigDecimal) => a.compareTo(b) == 0
    case _ => x == y
  }
}
