// skewagg: a Spark SQL extension for skewed keyed aggregations.
// One source tree, one sbt project per Spark line (spark40, spark41, ...; the lines and their
// pyspark and Scala versions are the rows of build/spark-lines). Each project compiles the same
// sources plus the shim directories whose range holds its line, against the Spark jars of that
// line's pyspark (provided at run time by the user's Spark), and builds
// skewagg-spark<line>_<scala binary>-<version>.jar. `build/sbt spark43/test` tests one line;
// the root project aggregates them all.

ThisBuild / organization := "io.skewagg"
// One version for jar and Python package: `__version__` in python/skewagg/version.py.
val skewaggVersion = """__version__ = "([^"]+)"""".r
  .findFirstMatchIn(IO.read(file("python/skewagg/version.py")))
  .map(_.group(1))
  .getOrElse(sys.error("python/skewagg/version.py has no __version__"))
ThisBuild / version := skewaggVersion
ThisBuild / scalaVersion := SparkLines.all.last.scala
// `all spark43/test spark40/test ...` (build/run-tests) runs one line's test JVM at a time: one
// keeps both cores busy (docs/testing.md, "Where the time goes"), and two would interleave logs.
Global / concurrentRestrictions += Tags.limit(Tags.ForkedTestGroup, 1)

/** The project of one build of a Spark line (build/spark-lines). */
def lineProject(id: String): Project = {
  val line = (SparkLines.all ++ SparkLines.fromMaven).find(_.id == id)
    .getOrElse(sys.error(s"build.sbt: project $id has no row in build/spark-lines"))
  Project(id, file("target") / id).settings(lineSettings(line))
}

// One project a build of build/spark-lines (checked below): a row's main build, and the second
// build of its also-scala column (spark35_213).
lazy val spark35 = lineProject("spark35")
lazy val spark35_213 = lineProject("spark35_213")
lazy val spark40 = lineProject("spark40")
lazy val spark41 = lineProject("spark41")
lazy val spark42 = lineProject("spark42")
lazy val spark43 = lineProject("spark43")
lazy val lineProjects = {
  val projects = Seq(spark35, spark40, spark41, spark42, spark43)
  require(projects.map(_.id) == SparkLines.all.map(_.id),
    "build.sbt: every row of build/spark-lines needs its project (lazy val sparkXY), no other")
  projects
}
lazy val mavenProjects = {
  val projects = Seq(spark35_213)
  require(projects.map(_.id) == SparkLines.fromMaven.map(_.id),
    "build.sbt: every also-scala build of build/spark-lines needs its project, no other")
  projects
}

// The builds `make test` spreads the slow tests over (TestSlice), in this order: the rows of
// build/spark-lines.
val spreadBuilds = SparkLines.all

// The suites the Maven Central builds run in `make test` (the main build of the same line runs
// every suite on the same Spark release; make test-full runs every suite on them too):
// registration, the kill switch, bad input, streaming left alone, and a differential suite of the
// three rewrites' markers.
val mavenBuildSuites = Set("ExtensionRegistrationSuite", "KillSwitchSuite", "BadInputSuite",
  "StreamingUntouchedSuite", "SkewAggLocalStageSuite").map("org.apache.spark.sql.skewagg." + _)

/**
 * The tests a build's test JVM runs (`SKEWAGG_TEST_SLICE`, read by TestSlice): with `spread`
 * (build/run-tests, make test) this build's share of the slow tests, as `index/builds` (each
 * build as its Spark line and Scala binary: `4/3.5_2.12,4.0_2.13,...,4.3_2.13`);
 * otherwise what the environment says, `all` when unset.
 */
def testSlice(line: SparkLine): String = sys.env.getOrElse("SKEWAGG_TEST_SLICE", "all") match {
  case "spread" if spreadBuilds.contains(line) =>
    val builds = spreadBuilds.map(b => s"${b.line}_${b.scalaBinary}").mkString(",")
    s"${spreadBuilds.indexOf(line)}/$builds"
  case "spread" => "all" // a Maven build runs mavenBuildSuites whole
  case other => other
}

def lineSettings(line: SparkLine): Seq[Setting[_]] = Seq(
    name := s"skewagg-spark${line.line}",
    moduleName := name.value, // keep the dot: skewagg-spark4.3_2.13-<version>.jar
    scalaVersion := line.scala,
    target := (ThisBuild / baseDirectory).value / "target" / line.id,
    Compile / scalaSource := (ThisBuild / baseDirectory).value / "scala/src/main/scala",
    Compile / unmanagedSourceDirectories ++=
      SparkLines.shimDirs((ThisBuild / baseDirectory).value / "scala/src/main", line),
    Compile / resourceDirectory := (ThisBuild / baseDirectory).value / "scala/src/main/resources",
    Test / scalaSource := (ThisBuild / baseDirectory).value / "scala/src/test/scala",
    Test / unmanagedSourceDirectories ++=
      SparkLines.shimDirs((ThisBuild / baseDirectory).value / "scala/src/test", line),
    Test / resourceDirectory := (ThisBuild / baseDirectory).value / "scala/src/test/resources",
    // The oldest Java the line's Spark runs on: 8 for Spark 3.5, 17 for 4.x.
    scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-release", line.javaRelease),
    javacOptions ++= Seq("--release", line.javaRelease),
    // Spark itself: the jars of the line's pyspark (build/spark-venv installs it once), or for a
    // Maven build Maven Central's artifacts, on the compile and test class paths and never in our
    // jar (provided by the user's Spark). Scala's own jars come from scalaVersion, the same
    // version as the line's Spark was built with.
    Compile / unmanagedJars := {
      if (line.fromMaven) Nil
      else {
        val root = (ThisBuild / baseDirectory).value
        val dir = scala.sys.process.Process(
          Seq("bash", (root / "build/spark-venv").getPath, line.line, "--jars"), root).!!.trim
        (file(dir) * "*.jar").get
          .filterNot(_.getName.matches("scala-(library|reflect|compiler)-.*"))
          .sortBy(_.getName).classpath
      }
    },
    libraryDependencies ++= (if (!line.fromMaven) Nil
                             else Seq("org.apache.spark" %% "spark-sql" % line.pyspark % Provided)),
    libraryDependencies += "org.scalatest" %% "scalatest" % "3.2.19" % Test,
    // make test (SKEWAGG_TEST_SLICE=spread): a Maven build runs mavenBuildSuites only.
    Test / testOptions ++= {
      val spread = sys.env.get("SKEWAGG_TEST_SLICE").contains("spread")
      if (line.fromMaven && spread) Seq(Tests.Filter(mavenBuildSuites)) else Nil
    },
    // The jar records which Spark it was built for, and every line skewagg has a jar for; the
    // extension refuses to start on another line, naming the jar to use or the lines supported.
    Compile / resourceGenerators += Def.task {
      val out = (Compile / resourceManaged).value / "skewagg-build.properties"
      IO.write(
        out,
        s"version=${version.value}\nspark.version=${line.pyspark}\nspark.line=${line.line}\n" +
          s"scala.binary=${scalaBinaryVersion.value}\n" +
          s"supported.lines=${SparkLines.all.map(_.line).mkString(",")}\n")
      Seq(out)
    }.taskValue,
    // Tests and `Test/runMain` run in a forked JVM with the flags Spark needs on Java 17.
    Test / fork := true,
    // The parallel collector: a test JVM's share of make test ran in 182 s against G1's 199 and
    // 214 s (docs/testing.md, "Where the time goes").
    Test / javaOptions ++= JavaModuleOptions.of((Compile / dependencyClasspath).value.files) ++
      Seq("-Xmx4g", "-XX:+UseParallelGC", "-Dspark.ui.enabled=false"),
    Test / parallelExecution := false,
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oD"),
    Test / run / fork := true,
    Test / baseDirectory := (ThisBuild / baseDirectory).value,
    Test / envVars += ("SKEWAGG_PROJECT_ROOT" -> (ThisBuild / baseDirectory).value.getAbsolutePath),
    Test / envVars += ("SKEWAGG_TEST_SLICE" -> testSlice(line)),
    Compile / packageBin / packageOptions += Package.ManifestAttributes(
      "Spark-Version" -> line.pyspark,
      "Implementation-Version" -> version.value),
    Compile / packageBin / mappings ++= Seq("LICENSE", "NOTICE")
      .map(f => (ThisBuild / baseDirectory).value / f -> s"META-INF/$f"),
    // Maven coordinates io.skewagg:skewagg-spark<line>_<scala>:<version>, Spark and Scala
    // provided (project/MavenPom.scala); make publish-local puts them in ~/.m2/repository.
    description := s"skewagg, a Spark SQL extension for skewed keyed aggregations, " +
      s"for Spark ${line.line} (Scala ${line.scalaBinary})",
    licenses := Seq("Apache-2.0" -> url("https://www.apache.org/licenses/LICENSE-2.0.txt")),
    pomPostProcess := MavenPom.providedSpark(line),
    // The local repository takes a rebuilt jar of the same version.
    publishM2Configuration := publishM2Configuration.value.withOverwrite(true)
)

lazy val root = (project in file("."))
  .aggregate((lineProjects ++ mavenProjects).map(p => p: ProjectReference): _*)
  .settings(
    name := "skewagg",
    publish / skip := true,
    // The root holds no sources: every line's project compiles scala/src.
    Compile / sources := Nil,
    Test / sources := Nil)
