import java.io.File
import java.net.URLClassLoader

/**
 * The JVM flags Spark needs on Java 17, as each Spark line's own launcher gives them
 * (org.apache.spark.launcher.JavaModuleOptions in that line's spark-launcher jar): forked test
 * and run JVMs get the flags of the line they test. The lines differ (4.1 added native access and
 * netty properties, 4.2 dropped -Djdk.reflect.useDirectMethodHandle=false; 3.5 has fewer).
 */
object JavaModuleOptions {
  def of(sparkJars: Seq[File]): Seq[String] = {
    val launcher = sparkJars.find(_.getName.startsWith("spark-launcher_")).getOrElse(
      sys.error(s"no spark-launcher jar among the Spark jars (${sparkJars.size} jars)"))
    val loader = new URLClassLoader(Array(launcher.toURI.toURL), null)
    try {
      val options = loader.loadClass("org.apache.spark.launcher.JavaModuleOptions")
      // 4.0+: an array; 3.5: one string, the flags separated by spaces.
      scala.util.Try(options.getMethod("defaultModuleOptionArray")).toOption match {
        case Some(array) => array.invoke(null).asInstanceOf[Array[String]].toSeq
        case None =>
          options.getMethod("defaultModuleOptions").invoke(null).asInstanceOf[String]
            .split(" ").filter(_.nonEmpty).toSeq
      }
    } finally loader.close()
  }
}
