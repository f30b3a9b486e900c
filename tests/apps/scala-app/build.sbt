// A Scala application that depends on skewagg by its Maven coordinates, as a user's build does:
// build/check-dist (check scala-app) runs it after make publish-local, with the repositories of
// ./repositories (the local Maven repository, then Maven Central). Spark is provided, as on a
// cluster; the application runs forked with the module flags Spark's own launcher would give.
scalaVersion := "2.13.8"
val skewagg = sys.props.getOrElse("skewagg.version", "0.1.0")
libraryDependencies ++= Seq(
  "org.apache.spark" %% "spark-sql" % "3.5.9" % Provided,
  "io.skewagg" % "skewagg-spark3.5_2.13" % skewagg)
run / fork := true
run / javaOptions ++= {
  val jars = (Compile / dependencyClasspath).value.files
  val launcher = jars.find(_.getName.startsWith("spark-launcher_")).get
  val loader = new java.net.URLClassLoader(Array(launcher.toURI.toURL), null)
  val options = loader.loadClass("org.apache.spark.launcher.JavaModuleOptions")
  options.getMethod("defaultModuleOptions").invoke(null).toString.split(" ").toSeq
}
// provided dependencies on the run class path, as spark-submit gives them
Compile / run := Defaults.runTask(Compile / fullClasspath, Compile / run / mainClass,
  Compile / run / runner).evaluated
