import scala.xml.{Elem, Node, NodeSeq}
import scala.xml.transform.{RewriteRule, RuleTransformer}

/**
 * The POM of a line's jar (`io.skewagg:skewagg-spark<line>_<scala>:<version>`, as Delta's
 * `io.delta:delta-spark_<scala>`): everything it needs at run time is the user's Spark, so Spark
 * and Scala are `provided` and `spark-submit --packages` fetches the jar alone.
 *
 * A build compiled against its pyspark's jars has no Spark among its library dependencies (Maven
 * Central lacks the newest releases), so its POM gets `spark-core` and `spark-sql` of the line's
 * release added, provided; a Maven build already names `spark-sql` provided. `scala-library`,
 * which sbt adds as a compile dependency, is made provided: Spark carries its own.
 */
object MavenPom {
  def providedSpark(line: SparkLine): Node => Node = { pom =>
    val spark: NodeSeq =
      if (line.fromMaven) NodeSeq.Empty
      else {
        Seq("spark-core", "spark-sql").map { artifact =>
          <dependency>
            <groupId>org.apache.spark</groupId>
            <artifactId>{s"${artifact}_${line.scalaBinary}"}</artifactId>
            <version>{line.pyspark}</version>
            <scope>provided</scope>
          </dependency>
        }
      }
    val rule = new RewriteRule {
      override def transform(node: Node): Seq[Node] = node match {
        case deps: Elem if deps.label == "dependencies" =>
          deps.copy(child = deps.child.map(scalaProvided) ++ spark)
        case other => other
      }
    }
    new RuleTransformer(rule).transform(pom).head
  }

  private def scalaProvided(node: Node): Node = node match {
    case dep: Elem if dep.label == "dependency" && (dep \ "artifactId").text == "scala-library" =>
      dep.copy(child = dep.child.filterNot(_.label == "scope") :+ <scope>provided</scope>)
    case other => other
  }
}
