package io.skewagg

import java.util.Properties

/** What this jar was built from: read from `skewagg-build.properties`, written by the build. */
object BuildInfo {
  private val props: Properties = {
    val p = new Properties()
    val in = getClass.getResourceAsStream("/skewagg-build.properties")
    if (in != null) {
      try p.load(in)
      finally in.close()
    }
    p
  }

  /** skewagg's own version, e.g. `0.1.0`. */
  val version: String = props.getProperty("version", "unknown")

  /** The Spark version the jar was compiled against, e.g. `4.0.1`. */
  val sparkVersion: String = props.getProperty("spark.version", "unknown")

  /** The Spark major.minor line the jar is for, e.g. `4.0`. */
  val sparkLine: String = props.getProperty("spark.line", "unknown")

  val scalaBinaryVersion: String = props.getProperty("scala.binary", "unknown")

  /** Every Spark line this version of skewagg has a jar for, oldest first (build/spark-lines). */
  val supportedLines: Seq[String] =
    props.getProperty("supported.lines", "").split(',').toSeq.filter(_.nonEmpty)

  /** A line that names the jar, e.g. `skewagg 0.1.0 for Spark 4.0 (Scala 2.13)`. */
  def describe: String = s"skewagg $version for Spark $sparkLine (Scala $scalaBinaryVersion)"

  /**
   * [[describe]] plus the JVM it runs in (`driver` or an executor id). Called on executors through
   * SQL `reflect('io.skewagg.BuildInfo', 'describeHere')`, it shows which executors loaded the jar.
   */
  def describeHere(): String = {
    val env = org.apache.spark.SparkEnv.get
    val where = if (env == null) "no SparkEnv" else env.executorId
    s"$describe on $where"
  }

  /** The major.minor of a Spark version string: `4.0.1` -> `4.0`. */
  def lineOf(sparkVersion: String): String = sparkVersion.split('.').take(2).mkString(".")

  /**
   * Stops session start-up with a clear message when this jar was built for another Spark line.
   * Internal APIs differ between lines, so a mismatched jar would otherwise fail later, inside
   * some query, with a linkage error.
   */
  def requireCompatibleSpark(runningSparkVersion: String): Unit = {
    val running = lineOf(runningSparkVersion)
    if (running != sparkLine) {
      val instead =
        if (supportedLines.contains(running)) {
          s"Use the skewagg jar built for Spark $running, skewagg-spark${running}_<scala>-" +
            s"$version.jar (`python -m skewagg jar-path` picks it for the Spark it finds)"
        } else {
          s"skewagg $version has no jar for Spark $running: it supports Spark " +
            s"${supportedLines.mkString(", ")}. Run the application on one of those lines"
        }
      throw new IllegalStateException(
        s"$describe cannot run on Spark $runningSparkVersion. $instead, or remove " +
          "io.skewagg.SkewAggExtensions from spark.sql.extensions.")
    }
  }
}
