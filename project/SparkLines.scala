import sbt._

/**
 * One build of a Spark line: the line, its newest release (`pyspark`) and the Scala it is
 * compiled with. A row of build/spark-lines is the line's main build, compiled against its
 * pyspark's jars; its optional also-scala column adds a second build (`fromMaven`), compiled
 * against Maven Central's Spark artifacts of that Scala binary.
 */
case class SparkLine(line: String, pyspark: String, scala: String, fromMaven: Boolean = false) {
  def scalaBinary: String = scala.split('.').take(2).mkString(".")

  /** The sbt project: `spark43` for 4.3, `spark35_213` for 3.5's Maven build with Scala 2.13. */
  def id: String = "spark" + line.replace(".", "") +
    (if (fromMaven) "_" + scalaBinary.replace(".", "") else "")
  def minor: (Int, Int) = SparkLines.minor(line)

  /** The oldest Java the line's Spark runs on, which its jar is compiled for. */
  def javaRelease: String = if (minor._1 < 4) "8" else "17"
}

object SparkLines {
  private lazy val rows: Seq[Array[String]] = IO.readLines(file("build/spark-lines"))
    .map(_.trim).filterNot(l => l.isEmpty || l.startsWith("#")).map(_.split("\\s+"))
    .map { row =>
      if (row.length < 4 || row.length > 5) {
        sys.error(s"build/spark-lines: bad row ${row.mkString(" ")}")
      }
      row
    }

  /** The main build of each row of build/spark-lines, oldest first; the last is the default. */
  lazy val all: Seq[SparkLine] = rows.map(r => SparkLine(r(0), r(1), r(2)))

  /** The second builds (the also-scala column), compiled against Maven Central's Spark. */
  lazy val fromMaven: Seq[SparkLine] =
    rows.filter(_.length == 5).map(r => SparkLine(r(0), r(1), r(4), fromMaven = true))

  def minor(line: String): (Int, Int) = line.split('.') match {
    case Array(a, b) => (a.toInt, b.toInt)
    case _ => sys.error(s"not a Spark line: $line")
  }

  private val Only = """spark-(\d+\.\d+)""".r
  private val From = """spark-(\d+\.\d+)\+""".r
  private val Between = """spark-(\d+\.\d+)-(\d+\.\d+)""".r

  /**
   * The shim directories under `base` whose range holds `line`: `spark-4.0` (that line only),
   * `spark-4.1+` (4.1 and newer), `spark-4.0-4.2` (4.0 to 4.2, both included).
   */
  def shimDirs(base: File, line: SparkLine): Seq[File] = {
    val ord = Ordering[(Int, Int)]
    Option(base.listFiles).toSeq.flatten.filter(_.isDirectory).filter { d =>
      d.getName match {
        case Only(a) => minor(a) == line.minor
        case From(a) => ord.gteq(line.minor, minor(a))
        case Between(a, b) => ord.gteq(line.minor, minor(a)) && ord.lteq(line.minor, minor(b))
        case _ => false
      }
    }.sortBy(_.getName)
  }
}
