package org.apache.spark.sql.skewagg

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Path, Paths}

/**
 * Writes `docs/configs.md` from [[SkewAggConf]]: `make docs` runs it, and [[ConfigDocsSuite]]
 * fails when the committed file differs from what it would write.
 */
object GenerateConfigDocs {
  val relativePath = "docs/configs.md"

  def render(): String = {
    val rows = SkewAggConf.entries.filter(_.isPublic).map { e =>
      val doc = e.doc.replace("|", "\\|").replace("\n", " ")
      val valid = SkewAggConf.validValues(e).description
      s"| `${e.key}` | `${e.defaultValueString}` | $valid | $doc | ${e.version} |"
    }
    (Seq(
      "# skewagg configuration",
      "",
      "<!-- Generated from SkewAggConf by `make docs`; do not edit by hand. -->",
      "",
      "Every key is a runtime SQL setting: set it in the Spark config, with `spark.conf.set`, or",
      "with `SET key=value` in SQL; rules read it each time they plan a query. An invalid value",
      "is rejected when it is set, with a message naming the key, the value and the valid values;",
      "a `spark.skewagg.*` key that is not listed here logs a warning naming the closest setting",
      "([bad-input.md](bad-input.md)).",
      "",
      "| Key | Default | Valid values | Meaning | Since |",
      "|---|---|---|---|---|") ++ rows).mkString("", "\n", "\n")
  }

  def projectRoot: Path = Paths.get(sys.env.getOrElse("SKEWAGG_PROJECT_ROOT", "."))

  def main(args: Array[String]): Unit = {
    val out = args.headOption.map(Paths.get(_)).getOrElse(projectRoot.resolve(relativePath))
    Files.createDirectories(out.toAbsolutePath.getParent)
    Files.write(out, render().getBytes(StandardCharsets.UTF_8))
    println(s"wrote $out")
  }
}
