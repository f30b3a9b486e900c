import sbt._

/** A row of build/spark-lines: a Spark line, its newest pyspark and the Scala it was built with. */
case class SparkLine(line: String, pyspark: String, scala: String) {
  /** The sbt project of the line: `spark43` for 4.3. */
  def id: String = "spark" + line.replace(".", "")
  def minor: (Int, Int) = SparkLines.minor(line)
}

object SparkLines {
  /** The rows of build/spark-lines, oldest first; the last is the default line. */
  lazy val all: Seq[SparkLine] = IO.readLines(file("build/spark-lines"))
    .map(_.trim).filterNot(l => l.isEmpty || l.startsWith("#"))
    .map(_.split("\\s+") match {
      case Array(l, py, sc, _*) => SparkLine(l, py, sc)
      case other => sys.error(s"build/spark-lines: bad row ${other.mkString(" ")}")
    })

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
