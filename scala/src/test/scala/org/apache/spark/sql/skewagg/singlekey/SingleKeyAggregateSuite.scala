package org.apache.spark.sql.skewagg.singlekey

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{
  EveryBuild, LineFeatures, SkewAggConf, SkewAggSuiteBase, SpreadOverBuilds, StreamingTestSources
}
import org.apache.spark.sql.skewagg.localagg.SumOfSquares
import org.apache.spark.sql.streaming.OutputMode

import org.apache.spark.sql.skewagg.SkewTestData.{holisticTable, percentilesOfV}

/**
 * Holistic aggregates planned one key at a time (SingleKeyAggregate): every function on skewed,
 * uniform, empty, all-null and single-key inputs gives Spark's rows (differential: skewagg off/on
 * x adaptive off/on), and the operator is used exactly where intended.
 *
 * collect_list has no order guarantee in Spark (its order depends on the partial buffers' merge
 * order), so it is compared sorted (`array_sort`).
 */
class SingleKeyAggregateSuite extends SkewAggSuiteBase with SpreadOverBuilds {

  private val Rows = 4000
  private val inputs: Seq[(String, SparkSession => DataFrame)] = Seq(
    "skewed" -> (s =>
      holisticTable(s, when(col("id") % 10 < 3, lit(0L)).otherwise(col("id") % 101), Rows)),
    "uniform" -> (s => holisticTable(s, col("id") % 101, Rows)),
    "single key" -> (s => holisticTable(s, lit(3L), 1000)),
    "empty" -> (s => holisticTable(s, col("id") % 101, Rows).where(col("id") < 0)),
    "all null" -> (s =>
      holisticTable(s, col("id") % 7, 500)
        .withColumn("v", lit(null).cast("double")).withColumn("i", lit(null).cast("int"))
        .withColumn("d", lit(null).cast("decimal(12,3)")).withColumn("m", lit(null).cast("int"))))

  /**
   * Every holistic function the operator computes, as SQL over the view `t`, one query per value
   * column (the holistic functions of one aggregate must share their value expression).
   */
  private val functions: Seq[(String, String)] = Seq(
    "percentile, median, percentile_cont, percentile_disc, mode of a double, with others" ->
      (percentilesOfV ++ orderedModes("mode() WITHIN GROUP (ORDER BY v)") ++ Seq(
        "percentile(v, 0.5) FILTER (WHERE i > 2)",
        "median(v) FILTER (WHERE i < 5)",
        "sum(v)",
        "count(*)",
        "count(v)",
        "avg(i)",
        "max(s)",
        "sum(i) FILTER (WHERE i > 1)",
        "array_sort(collect_list(i))",
        "array_sort(collect_set(s))")).mkString(", "),
    "percentile and mode of an int" -> (Seq("percentile(i, 0.5), percentile(i, array(0.2, 0.8))") ++
      orderedModes(
        "mode() WITHIN GROUP (ORDER BY i), mode() WITHIN GROUP (ORDER BY i DESC), mode(i, true)"))
      .mkString(", "),
    "percentile of a decimal" -> "percentile(d, 0.5), percentile(d, array(0.1, 0.9)), median(d)",
    "percentile of intervals" -> ("percentile(make_ym_interval(0, i), array(0.2, 0.7)), " +
      "percentile(make_ym_interval(0, i), 0.4)"),
    "percentile of a day-time interval" -> "median(make_dt_interval(0, 0, i, 0))",
    "mode with one most frequent value" -> "mode(m), count(m)") ++ orderedModes(
    "mode of a string" -> "mode() WITHIN GROUP (ORDER BY s DESC), mode(s, true)")

  /** Modes with an order that breaks ties, on the lines that have them. */
  private def orderedModes[T](modes: T*): Seq[T] = if (LineFeatures.orderedMode) modes else Nil

  private def sql(select: String, groupBy: String = "k"): SparkSession => DataFrame =
    s => s.sql(s"SELECT $groupBy, $select FROM t GROUP BY $groupBy")

  /** The one-key-at-a-time operators: SingleKeyAggregate, with or without hot keys split. */
  private def singleKey(plan: SparkPlan): Seq[SparkPlan] =
    nodes[SingleKeyAggregateExec](plan) ++ nodes[HotKeySplitAggregateExec](plan)

  private def onInput(
      input: SparkSession => DataFrame,
      query: SparkSession => DataFrame): SparkSession => DataFrame = s => {
    input(s).createOrReplaceTempView("t")
    query(s)
  }

  for ((inputName, input) <- inputs; (functionName, select) <- functions) {
    // Modes read shims that differ between lines (ModeOrders, SkewAggModeKeys): every build.
    val builds = if (functionName.contains("mode")) Seq(EveryBuild) else Nil
    test(s"$functionName on $inputName input: Spark's rows, one key at a time", builds: _*) {
      val d = differential(onInput(input, sql(select)), SQLConf.SHUFFLE_PARTITIONS.key -> "5")
      for (adaptive <- Seq(false, true)) {
        assert(singleKey(d.plan(on = true, adaptive)).size == 1, d.plan(on = true, adaptive))
        assert(singleKey(d.plan(on = false, adaptive)).isEmpty, d.plan(on = false, adaptive))
      }
      if (inputName == "empty") assert(d.rows.isEmpty)
      else assert(d.rows.nonEmpty)
    }
  }

  test("interpolated percentiles are the running Spark's to the last bit", EveryBuild) {
    // The differential comparison allows a relative 1e-9 (sums in another order); a percentile
    // is Spark's own arithmetic on the same two values, so it must be equal bit for bit (Spark
    // 4.3 changed that arithmetic: PercentileInterpolation). Except the sign of a zero: where
    // -0.0 and 0.0 tie at a rank, Spark's pick depends on its hash map's order.
    val query = onInput(
      inputs.head._2,
      sql("percentile(v, array(0.1, 0.37, 0.9)), " +
        "median(v), percentile_cont(0.6) WITHIN GROUP (ORDER BY v DESC)"))
    val d = differential(query)
    assert(singleKey(d.plan(on = true, adaptive = true)).nonEmpty)
    val bits = for (on <- Seq(false, true)) yield {
      withSQLConf(SkewAggConf.ENABLED.key -> on.toString) {
        query(spark).collect().map(_.toString.replaceAll("-0\\.0(?![0-9])", "0.0")).sorted.toSeq
      }
    }
    assert(bits(0) == bits(1))
  }

  test("a computed grouping key and a DataFrame query") {
    val d = differential(s =>
      holisticTable(s, col("id") % 23, Rows)
        .groupBy((col("k") % 5).as("g"), col("s"))
        .agg(expr("percentile(v, 0.5)"), min("d")))
    assert(singleKey(d.plan(on = true, adaptive = true)).size == 1)
  }

  test("collect_list / collect_set alone, when spark.skewagg.singleKey.collect.enabled") {
    val d = differential(
      onInput(
        inputs.head._2,
        sql("array_sort(collect_list(v)), array_sort(collect_set(i)), count(*)")),
      SkewAggConf.SINGLE_KEY_COLLECT_ENABLED.key -> "true")
    for (adaptive <- Seq(false, true)) {
      val plan = nodes[SingleKeyAggregateExec](d.plan(on = true, adaptive))
      assert(plan.size == 1 && plan.head.sortValue.isEmpty, plan)
    }
  }

  test("typed Aggregators alone, when spark.skewagg.singleKey.typedAggregate.enabled") {
    val typed = SkewAggConf.SINGLE_KEY_TYPED_AGGREGATE_ENABLED.key
    val sumOfSquares = udaf(SumOfSquares)
    val query = (s: SparkSession) =>
      holisticTable(s, col("id") % 23, Rows).groupBy("k")
        .agg(
          sumOfSquares(col("d").cast("double")),
          sumOfSquares(col("i").cast("double")),
          count("v"),
          max("d"))
    val on = differential(query, typed -> "true")
    for (adaptive <- Seq(false, true)) {
      val plan = nodes[SingleKeyAggregateExec](on.plan(on = true, adaptive))
      assert(plan.size == 1 && plan.head.sortValue.isEmpty, plan)
    }
    // Off by default; and a collect_list beside it still needs its own setting (list order).
    val withCollect = (s: SparkSession) =>
      holisticTable(s, col("id") % 23, Rows).groupBy("k")
        .agg(sumOfSquares(col("i").cast("double")), size(collect_list("v")))
    for ((q, settings) <- Seq(query -> Nil, withCollect -> Seq(typed -> "true"))) {
      val d = differential(q, settings: _*)
      assert(
        singleKey(d.plan(on = true, adaptive = true)).isEmpty,
        d.plan(on = true, adaptive = true))
    }
  }

  test("a spilling key buffer gives the same rows and reports its spill size", EveryBuild) {
    val query = onInput(inputs.head._2, sql("percentile(v, array(0.1, 0.5, 0.9)), median(v)"))
    val spill = Seq(
      SkewAggConf.SINGLE_KEY_BUFFER_IN_MEMORY_ROWS.key -> "0",
      SkewAggConf.SINGLE_KEY_BUFFER_SPILL_ROWS.key -> "64")
    val d = differential(query, spill: _*)
    assert(singleKey(d.plan(on = true, adaptive = false)).size == 1)
    withSQLConf(spill ++ Seq(
      SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> "false",
      SQLConf.SHUFFLE_PARTITIONS.key -> "5"): _*) {
      val df = query(spark)
      val rows = df.collect()
      val op = singleKey(executedPlan(df)).head
      assert(op.metrics("numOutputRows").value == rows.length) // keys processed
      assert(op.metrics("numInputRows").value == Rows)
      assert(op.metrics("spillSize").value > 0)
    }
  }

  test("metrics without spilling: keys processed, rows read, zero spill") {
    withSQLConf(SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> "true") {
      val df = onInput(inputs(1)._2, sql("percentile(v, 0.5)"))(spark)
      assert(df.collect().length == 101)
      val op = singleKey(executedPlan(df)).head
      assert(op.metrics("numOutputRows").value == 101)
      assert(op.metrics("numInputRows").value == Rows)
      assert(op.metrics("spillSize").value == 0)
      assert(executedPlan(df).treeString.contains("HotKeySplitAggregate(key=[k#"))
    }
  }

  test("a negative frequency fails as in Spark", EveryBuild) {
    val input: SparkSession => DataFrame = s =>
      holisticTable(s, col("id") % 5, 100)
        .withColumn("f", when(col("k") === 2 && col("i") === 3, lit(-1L)).otherwise(lit(1L)))
    for (on <- Seq(false, true)) {
      withSQLConf(SkewAggConf.ENABLED.key -> on.toString) {
        val df = onInput(input, sql("percentile(v, 0.5, f)"))(spark)
        val e = intercept[Exception](df.collect())
        assert(e.getMessage.contains(LineFeatures.negativeFrequencyText), e.getMessage)
      }
    }
  }

  /** Queries the operator leaves to Spark, still exact (the differential runs them). */
  private val refused = Seq[(String, SparkSession => DataFrame)](
    "disabled" -> sql("percentile(v, 0.5)"),
    "only collect_list" -> sql("array_sort(collect_list(v))"),
    "two value columns" -> sql("percentile(v, 0.5), percentile(i, 0.5)"),
    "distinct" -> sql("percentile(v, 0.5), count(DISTINCT i)"),
    // The sort would evaluate the value on the rows the FILTER leaves out (ANSI errors).
    "a FILTER and a cast that fails on the other rows" ->
      sql("percentile(CAST(IF(i > 3, 'x', s) AS INT), 0.5) FILTER (WHERE i <= 3)"),
    "a FILTER and a division by zero on the other rows" ->
      sql("median(10 / i) FILTER (WHERE i <> 0)"),
    "no grouping key" -> (s => s.sql("SELECT percentile(v, 0.5) FROM t")),
    "grouping sets" -> (s =>
      s.sql(
        "SELECT k, i, percentile(v, 0.5) FROM t GROUP BY GROUPING SETS ((k), (k, i))")),
    "NO_SKEW_AGG hint" ->
      (s => s.table("t").groupBy("k").agg(expr("percentile(v, 0.5)")).hint("no_skew_agg"))) ++
    (if (!LineFeatures.collations) Nil
     else {
       Seq[(String, SparkSession => DataFrame)]("a collated string key" -> (s =>
         s.sql("SELECT c, percentile(v, 0.5) FROM " +
           "(SELECT collate(s, 'UTF8_LCASE') AS c, v FROM t) GROUP BY c")))
     })

  for ((name, query) <- refused) {
    // Collations are a shim (Collations): on every build.
    val builds = if (name.contains("collated")) Seq(EveryBuild) else Nil
    test(s"left to Spark: $name", builds: _*) {
      val conf = if (name == "disabled") Seq(SkewAggConf.SINGLE_KEY_ENABLED.key -> "false") else Nil
      val d = differential(onInput(inputs(1)._2, query), conf: _*)
      for (adaptive <- Seq(false, true)) {
        val plan = d.plan(on = true, adaptive)
        assert(singleKey(plan).isEmpty, plan)
        assert(nodes[BaseAggregateExec](plan).nonEmpty, plan)
      }
    }
  }

  test("a streaming aggregate keeps Spark's plan") {
    val session = spark
    import session.implicits._
    val query = StreamingTestSources.longs(session, 0L until 300L)
      .select(($"value" % 10).as("k"), $"value".cast("double").as("v"))
      .groupBy("k").agg(expr("percentile(v, 0.5)").as("p"))
      .writeStream.format("memory").queryName("single_key_streaming")
      .outputMode(OutputMode.Complete()).start()
    try {
      query.processAllAvailable()
      val executed = StreamingTestSources.lastPlan(query)
      assert(singleKey(executed).isEmpty, executed)
      assert(nodes[BaseAggregateExec](executed).nonEmpty, executed)
      val medians =
        spark.table("single_key_streaming").collect().map(r => r.getLong(0) -> r.getDouble(1)).toMap
      assert(medians(0L) == 145.0)
    } finally {
      query.stop()
    }
  }
}
