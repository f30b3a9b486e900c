import java.io.File
import java.net.URLClassLoader

/**
 * The JVM flags Spark needs on Java 17, as each Spark line's own launcher gives them
 * (org.apache.spark.launcher.JavaModuleOptions in that line's spark-launcher jar): forked test
 * and run JVMs get the flags of the line they test. The lines differ (4.1 added native access and
 * netty properties, 4.2 dropped -Djdk.reflect.useDirectMethodHandle=false).
 */
object JavaModuleOptions {
  def of(sparkJars: Seq[File]): Seq[String] = {
    val launcher = sparkJars.find(_.getName.startsWith("spark-launcher_")).getOrElse(
      sys.error(s"no spark-launcher jar among the Spark jars (${sparkJars.size} jars)"))
    val loader = new URLClassLoader(Array(launcher.toURI.toURL), null)
    try {
      loader.loadClass("org.apache.spark.launcher.JavaModuleOptions")
        .getMethod("defaultModuleOptionArray").invoke(null)
        .asInstanceOf[Array[String]].toSeq
    } finally loader.close()
  }
}
