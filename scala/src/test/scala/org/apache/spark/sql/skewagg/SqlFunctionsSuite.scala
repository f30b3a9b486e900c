package org.apache.spark.sql.skewagg

import scala.collection.mutable

import io.skewagg.functions.SkewTestFunctions

import org.apache.spark.scheduler.{SparkListener, SparkListenerStageSubmitted}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.explain.SkewAggExplain

/**
 * The SQL functions through which any client (Spark Connect, SQL, JDBC) gets what the Python
 * helpers show: `skewagg_explain(TABLE(q) [, run])`, `skewagg_task_times(tag)`,
 * `skewagg_skew_test(sizes)` and `skewagg_task_slots([tasks])` (docs/connect.md). Their code is the
 * same on every line: every build calls each function (its [[EveryBuild]] tests), and the longer
 * runs of the explanation and the task times go to one build each ([[SpreadOverBuilds]]).
 */
class SqlFunctionsSuite extends SkewAggSuiteBase with SpreadOverBuilds {
  private val skewedJoin = "SELECT attr, sum(v) AS s FROM skew_fact JOIN skew_dim USING (k) " +
    "GROUP BY attr"

  // The join split, decided when the query runs (no local aggregate decided at planning).
  private val conf = SkewTestData.conf :+ (SkewAggConf.JOIN_LOCAL_AGGREGATE_ENABLED.key -> "false")

  private def withTables[T](session: SparkSession)(body: => T): T = {
    SkewTestData.fact(session, skewed = true).createOrReplaceTempView("skew_fact")
    SkewTestData.dim(session).createOrReplaceTempView("skew_dim")
    withSQLConf(conf: _*)(body)
  }

  private def explained(session: SparkSession, query: String): String =
    session.sql(s"SELECT line FROM skewagg_explain($query)").collect().map(_.getString(0) + "\n")
      .mkString

  test("skewagg_explain: not decided before the query ran, its run's text after, in its session") {
    withTables(spark) {
      val df = spark.sql(skewedJoin)
      df.createOrReplaceTempView("skewed_join")
      val before = explained(spark, "TABLE(skewed_join)")
      assert(before.contains("not decided yet") && before.contains("With Spark Connect"), before)

      df.collect()
      val ran = SkewAggExplain.explain(executedPlan(df))
      assert(ran.contains("rewritten"), ran)
      assert(!ran.contains("not decided yet"), ran)

      assert(explained(spark, "TABLE(skewed_join)") == ran)
      // The same query written out, not through the view: the same analyzed plan.
      assert(explained(spark, s"TABLE($skewedJoin)") == ran)
      // Another session's runs are not this one's.
      val other = spark.newSession()
      conf.foreach { case (key, value) => other.conf.set(key, value) }
      withTables(other) {
        other.sql(skewedJoin).createOrReplaceTempView("skewed_join")
        assert(explained(other, "TABLE(skewed_join)") == before)
      }
    }
  }

  test("skewagg_explain with run = true runs the query first and explains that run") {
    withTables(spark) {
      val query = skewedJoin.replace("GROUP BY", "WHERE attr < 9 GROUP BY")
      val fresh = explained(spark, s"TABLE($query), true")
      val df = spark.sql(query)
      df.collect()
      assert(fresh == SkewAggExplain.explain(executedPlan(df)), fresh)
      assert(fresh.contains("rewritten"), fresh)
    }
  }

  test("skewagg_explain answers with skewagg off, and says so", EveryBuild) {
    withTables(spark) {
      withSQLConf(SkewAggConf.ENABLED.key -> "false") {
        val text = explained(spark, s"TABLE($skewedJoin), true")
        assert(text.contains("aggregate 1") && !text.contains("rewritten"), text)
      }
    }
  }

  test("skewagg_task_times: the tasks of the jobs of one tag, read once") {
    withTables(spark) {
      val tag = s"skewagg-suite-${System.nanoTime()}"
      spark.sparkContext.addJobTag(tag)
      try spark.sql(skewedJoin).collect()
      finally spark.sparkContext.removeJobTag(tag)
      // Untagged: not recorded (its stages, seen by a listener of its own, are not read).
      val untagged = mutable.Set.empty[Int]
      val listener = new SparkListener {
        override def onStageSubmitted(e: SparkListenerStageSubmitted): Unit =
          untagged.synchronized(untagged += e.stageInfo.stageId)
      }
      spark.sparkContext.addSparkListener(listener)
      try spark.sql(skewedJoin).collect()
      finally {
        spark.sparkContext.listenerBus.waitUntilEmpty()
        spark.sparkContext.removeSparkListener(listener)
      }
      val rows = spark.sql(s"SELECT * FROM skewagg_task_times('$tag')").collect()
      assert(rows.map(_.getAs[Int]("stage")).distinct.length >= 3, rows.mkString("\n"))
      assert(untagged.nonEmpty)
      assert(rows.forall(r => !untagged.contains(r.getAs[Int]("stage"))), rows.mkString("\n"))
      assert(rows.forall(_.getAs[Long]("duration_ms") >= 0))
      val records = rows.map(_.getAs[Long]("records")).sum
      assert(records >= 20000 + SkewTestData.Keys, rows.mkString("\n"))
      assert(spark.sql(s"SELECT * FROM skewagg_task_times('$tag')").count() == 0)
      // A relation like any other: joined with itself.
      assert(spark.sql(s"SELECT count(*) FROM skewagg_task_times('$tag') a " +
        s"JOIN skewagg_task_times('$tag') b USING (stage)").head().getLong(0) == 0)
    }
  }

  test("skewagg_skew_test and skewagg_task_slots decide as the rules do", EveryBuild) {
    withSQLConf(SkewAggConf.SKEW_TASK_SLOTS.key -> "64") {
      val sizes = Array.fill(31)(1000L) :+ (64L << 20)
      val row = spark.sql(
        s"SELECT skewagg_skew_test(array(${sizes.mkString(", ")})), skewagg_task_slots()").head()
      assert(row.getString(0) == SkewTestFunctions.skewTestJson(sizes, SQLConf.get))
      assert(row.getString(0).contains(s""""skewed":[[31,${64L << 20}]]"""), row.getString(0))
      assert(row.getInt(1) == 64)
      assert(row.schema.fieldNames.toSeq == Seq("skewagg_skew_test(...)", "skewagg_task_slots()"))
    }
    withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> "3") {
      assert(spark.sql("SELECT skewagg_task_slots(), skewagg_task_slots(5)").head().toSeq ==
        Seq(TaskSlots.of(SQLConf.get, 3), TaskSlots.of(SQLConf.get, 5)))
    }
  }

  test("bad arguments are clear errors naming the function and the fix", EveryBuild) {
    def error(query: String): String =
      intercept[Exception](spark.sql(query).collect()).getMessage
    assert(error("SELECT * FROM skewagg_explain(1)")
      .contains("skewagg_explain takes the query as TABLE(...)"))
    assert(
      error("SELECT * FROM skewagg_explain(TABLE(SELECT 1), 'yes')").contains("run is of type"))
    assert(error("SELECT * FROM skewagg_task_times('nightly')")
      .contains("spark.addTag('skewagg-nightly')"))
    assert(error("SELECT * FROM skewagg_task_times(1)").contains("string literal"))
    assert(error("SELECT skewagg_skew_test(array('a'))").contains("array of integers"))
    assert(error("SELECT skewagg_skew_test(array(id)) FROM range(3)").contains("as a literal"))
    assert(error("SELECT skewagg_task_slots('x')").contains("integer literal"))
  }

}
