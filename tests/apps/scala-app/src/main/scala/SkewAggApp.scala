import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.functions.{col, lit, sum, when}

/**
 * skewagg from a Scala application: the extension added on the builder, a skewed join then
 * groupBy with skewagg off and on. Exits non-zero unless skewagg rewrote it (SkewAggLocalStage)
 * and the rows are Spark's.
 */
object SkewAggApp {
  def main(args: Array[String]): Unit = {
    val spark = SparkSession.builder().master("local[2]").appName("skewagg-scala-app")
      .config("spark.ui.enabled", "false")
      .config("spark.sql.shuffle.partitions", "16")
      .config("spark.sql.autoBroadcastJoinThreshold", "-1")
      .withExtensions(new io.skewagg.SkewAggExtensions)
      .getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    val fact = spark.range(0, 200000).select(
      when(col("id") % 10 < 3, lit(0L)).otherwise(col("id") % 997).as("k"),
      (col("id") % 1000).as("v"))
    val dim = spark.range(0, 997).select(col("id").as("k"), (col("id") % 10).as("attr"))
    val runs = Seq("false", "true").map { on =>
      spark.conf.set("spark.skewagg.enabled", on)
      val df = fact.join(dim, "k").groupBy("k").agg(sum("v").as("s"))
      (df.collect().map(_.toString).sorted.toSeq, df.queryExecution.executedPlan.toString)
    }
    val rewritten = runs(1)._2.contains("SkewAggLocalStage")
    val equal = runs(0)._1 == runs(1)._1
    println(spark.sql("SELECT skewagg_version()").head().getString(0))
    println(s"=== skewed join -> groupBy: ${if (rewritten) "rewritten" else "NOT rewritten"}, " +
      s"rows ${if (equal) "equal" else "DIFFERENT"} (${runs(1)._1.size} rows)")
    spark.stop()
    if (!(rewritten && equal)) sys.exit(1)
  }
}
