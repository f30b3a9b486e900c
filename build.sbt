// skewagg: a Spark SQL extension for skewed keyed aggregations.
// The Spark version is chosen with -Dspark.version=...; its major.minor line ("4.0") picks the
// shim source directory scala/src/main/spark-<line> and names the jar
// (skewagg-spark<line>_<scala binary>-<version>.jar).

val sparkVersion = sys.props.getOrElse("spark.version", "4.0.1")
val sparkLine = sparkVersion.split('.').take(2).mkString(".")
val supportedSparkLines = Map("4.0" -> "2.13.16")

val scalaFor = supportedSparkLines.getOrElse(
  sparkLine,
  sys.error(
    s"skewagg does not support Spark $sparkVersion; supported lines: " +
      supportedSparkLines.keys.toSeq.sorted.mkString(", ")))

ThisBuild / organization := "io.skewagg"
// One version for jar and Python package: `__version__` in python/skewagg/__init__.py.
val skewaggVersion = """__version__ = "([^"]+)"""".r
  .findFirstMatchIn(IO.read(file("python/skewagg/__init__.py")))
  .map(_.group(1))
  .getOrElse(sys.error("python/skewagg/__init__.py has no __version__"))

ThisBuild / version := skewaggVersion
ThisBuild / scalaVersion := scalaFor

lazy val root = (project in file("."))
  .settings(
    name := s"skewagg-spark$sparkLine",
    moduleName := name.value, // keep the dot: skewagg-spark4.0_2.13-<version>.jar
    Compile / scalaSource := baseDirectory.value / "scala" / "src" / "main" / "scala",
    Compile / unmanagedSourceDirectories +=
      baseDirectory.value / "scala" / "src" / "main" / s"spark-$sparkLine",
    Compile / resourceDirectory := baseDirectory.value / "scala" / "src" / "main" / "resources",
    Test / scalaSource := baseDirectory.value / "scala" / "src" / "test" / "scala",
    Test / resourceDirectory := baseDirectory.value / "scala" / "src" / "test" / "resources",
    scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-release", "17"),
    javacOptions ++= Seq("--release", "17"),
    libraryDependencies ++= Seq(
      "org.apache.spark" %% "spark-sql" % sparkVersion % Provided,
      "org.scalatest" %% "scalatest" % "3.2.19" % Test
    ),
    // The jar records which Spark it was built for; the extension refuses to start on another line.
    Compile / resourceGenerators += Def.task {
      val out = (Compile / resourceManaged).value / "skewagg-build.properties"
      IO.write(
        out,
        s"version=${version.value}\nspark.version=$sparkVersion\nspark.line=$sparkLine\n" +
          s"scala.binary=${scalaBinaryVersion.value}\n")
      Seq(out)
    }.taskValue,
    // Tests and `Test/runMain` run in a forked JVM with the flags Spark needs on Java 17.
    Test / fork := true,
    Test / javaOptions ++= JavaModuleOptions.flags ++ Seq("-Xmx4g", "-Dspark.ui.enabled=false"),
    Test / parallelExecution := false,
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oD"),
    Test / run / fork := true,
    Test / baseDirectory := (ThisBuild / baseDirectory).value,
    Test / envVars += ("SKEWAGG_PROJECT_ROOT" -> (ThisBuild / baseDirectory).value.getAbsolutePath),
    Compile / packageBin / packageOptions += Package.ManifestAttributes(
      "Spark-Version" -> sparkVersion,
      "Implementation-Version" -> version.value)
  )
