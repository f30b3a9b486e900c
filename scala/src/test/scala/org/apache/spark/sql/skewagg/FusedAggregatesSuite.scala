package org.apache.spark.sql.skewagg

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.expressions.aggregate.Complete
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.functions._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.explain.SkewAggExplain

import SkewTestData._

/**
 * skewagg's run-time splits where Spark fuses an aggregate's partial and final halves into one
 * Complete-mode aggregate: `spark.sql.execution.combineAdjacentAggregation` (Spark 4.3, on by
 * default; no such setting before) and `spark.sql.execution.replaceHashWithSortAgg`. Each query
 * runs with both on and both off, and is rewritten the same way either way.
 */
class FusedAggregatesSuite extends SkewAggSuiteBase with SpreadOverBuilds {
  private def fusing(on: Boolean): Seq[(String, String)] = Seq(
    FusedAggregatesSuite.CombineAdjacent -> on.toString,
    SQLConf.REPLACE_HASH_WITH_SORT_AGG_ENABLED.key -> on.toString)

  private def complete(plan: SparkPlan): Seq[BaseAggregateExec] = nodes[BaseAggregateExec](plan)
    .filter(a =>
      a.aggregateExpressions.nonEmpty && a.aggregateExpressions.forall(_.mode == Complete))

  private def splits(d: Differential, prefix: String): Int =
    nodes[SkewAggLocalStageExec](d.plan(on = true, adaptive = true))
      .count(_.rewrite.what.startsWith(prefix))

  private def bothWays(extra: (String, String)*)(query: SparkSession => DataFrame)(
      check: (Boolean, Differential) => Unit): Unit = for (fuse <- Seq(true, false)) {
    check(fuse, differential(query, conf ++ extra ++ fusing(fuse): _*))
  }

  test("a skewed user repartition below a (fused) aggregate is split") {
    bothWays(SkewAggConf.REPARTITION_LOCAL_AGGREGATE_ENABLED.key -> "false")(s =>
      fact(s, skewed = true).repartition(col("k")).groupBy("k").agg(sum("v"), max("i"))) {
      (fuse, d) =>
        assert(
          splits(d, "skewed repartition read in splits") == 1,
          s"fuse=$fuse\n${d.plan(on = true, adaptive = true)}")
        // No partial aggregate of Spark's own is left fused above the split read.
        assert(complete(d.plan(on = true, adaptive = true)).isEmpty)
    }
  }

  test("a skewed join below a (fused) aggregate is split") {
    bothWays(SkewAggConf.JOIN_LOCAL_AGGREGATE_ENABLED.key -> "false")(s =>
      fact(s, skewed = true).join(dim(s), "k").groupBy("k").agg(sum("v"), count(lit(1)))) {
      (fuse, d) =>
        assert(
          splits(d, "skew split of the join below the aggregate") == 1,
          s"fuse=$fuse\n${d.plan(on = true, adaptive = true)}")
    }
  }

  test("uniform data: the fused aggregate stays exactly Spark's") {
    bothWays(
      SkewAggConf.REPARTITION_LOCAL_AGGREGATE_ENABLED.key -> "false",
      SkewAggConf.JOIN_LOCAL_AGGREGATE_ENABLED.key -> "false")(s =>
      fact(s, skewed = false).join(dim(s), "k").groupBy("k").agg(sum("v"))) { (fuse, d) =>
      for (adaptive <- Seq(false, true)) {
        assert(shape(d.plan(on = true, adaptive)) == shape(d.plan(on = false, adaptive)))
      }
      if (fuse && FusedAggregatesSuite.combinesAdjacent) {
        assert(
          complete(d.plan(on = true, adaptive = true)).nonEmpty,
          d.plan(on = true, adaptive = true))
      }
    }
  }

  test("a DISTINCT over a bucketed scan: two fused aggregates, one above the other " +
    "(fuzz seed 5, case 367)") {
    for (skewed <- Seq(false, true)) {
      val table = s"fused_distinct_${if (skewed) "skewed" else "uniform"}"
      spark.sql(s"DROP TABLE IF EXISTS $table")
      fact(spark, skewed).write.bucketBy(16, "k").format("parquet").saveAsTable(table)
      try {
        // (16 slots for 16 buckets: each uniform bucket an even share; 30% of the rows 4.8x it.)
        bothWays(
          SQLConf.ANSI_ENABLED.key -> "true",
          SkewAggConf.SKEW_FACTOR.key -> "3",
          SkewAggConf.SKEW_TASK_SLOTS.key -> "16")(s =>
          s.table(table).groupBy("k").agg(countDistinct("i"))) { (fuse, d) =>
          val plan = d.plan(on = true, adaptive = true)
          if (skewed) {
            assert(nodes[SkewAggLocalStageExec](plan).nonEmpty, s"fuse=$fuse\n$plan")
          } else {
            for (adaptive <- Seq(false, true)) {
              assert(shape(d.plan(on = true, adaptive)) == shape(d.plan(on = false, adaptive)))
            }
          }
        }
      } finally spark.sql(s"DROP TABLE IF EXISTS $table")
    }
  }

  test("explained from its input, as a partial aggregate would be", EveryBuild) {
    withSQLConf(conf ++ fusing(on = true) ++ Seq(
      SkewAggConf.JOIN_LOCAL_AGGREGATE_ENABLED.key -> "false",
      SQLConf.ADAPTIVE_EXECUTION_ENABLED.key -> "true"): _*) {
      val df = fact(spark, skewed = false).join(dim(spark), "k").groupBy("k").agg(sum("v"))
      df.collect()
      val text = SkewAggExplain.explain(df.queryExecution.executedPlan)
      assert(text.contains("not skewed: in the join's input shuffles below"), text)
    }
  }
}

object FusedAggregatesSuite {

  /** Spark 4.3's setting; earlier lines have none (setting it there changes nothing). */
  val CombineAdjacent = "spark.sql.execution.combineAdjacentAggregation"

  /** Whether the running Spark fuses adjacent aggregates when asked to. */
  lazy val combinesAdjacent: Boolean =
    SQLConf.containsConfigKey(CombineAdjacent)
}
