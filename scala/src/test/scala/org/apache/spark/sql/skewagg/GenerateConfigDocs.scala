package org.apache.spark.sql.skewagg

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Path, Paths}

/**
 * Writes `docs/configs.md` from [[SkewAggConf]], and the skew test's settings with their defaults
 * for the Python package (`python/skewagg/advisor/skew_settings.json`, read by the event-log
 * advisor, which runs without a JVM): `make docs` runs it, and [[ConfigDocsSuite]] fails when a
 * committed file differs from what it would write.
 */
object GenerateConfigDocs {
  val relativePath = "docs/configs.md"
  val skewSettingsPath = "python/skewagg/advisor/skew_settings.json"

  /**
   * The settings of the skew test ([[SkewedPartitions]], [[TaskSlots]]), of the hot-key splits
   * and of the merge of heavy partial states, in this order.
   */
  val skewSettings: Seq[String] = Seq(
    SkewAggConf.SKEW_FACTOR,
    SkewAggConf.SKEW_MIN_PARTITION_SIZE,
    SkewAggConf.SKEW_MIN_SPLIT_SIZE,
    SkewAggConf.SKEW_TASK_SLOTS,
    SkewAggConf.SINGLE_KEY_SPLIT_MIN_KEY_ROWS,
    SkewAggConf.SINGLE_KEY_SPLIT_MAX_SPLITS,
    SkewAggConf.WINDOW_SPLIT_MIN_KEY_ROWS,
    SkewAggConf.WINDOW_SPLIT_MAX_SPLITS,
    SkewAggConf.LOCAL_AGGREGATE_CAPACITY,
    SkewAggConf.LOCAL_AGGREGATE_MIN_MERGE_REDUCTION,
    SkewAggConf.WINDOW_SPLIT_SAMPLE_FRACTION,
    SkewAggConf.PARTIAL_STATES_MIN_STATE_SIZE).map(_.key)

  /** `{"key": "default", ...}` of [[skewSettings]], one key a line. */
  def renderSkewSettings(): String = {
    val entries = SkewAggConf.entries.map(e => e.key -> e.defaultValueString).toMap
    val lines = skewSettings.map(k => s"""  "$k": "${entries(k)}"""")
    (Seq(
      "{",
      """  "_generated": "from SkewAggConf by `make docs` (GenerateConfigDocs); do not edit",""") ++
      Seq(lines.mkString(",\n")) ++ Seq("}")).mkString("", "\n", "\n")
  }

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
    write(out, render())
    write(projectRoot.resolve(skewSettingsPath), renderSkewSettings())
  }

  private def write(out: Path, text: String): Unit = {
    Files.createDirectories(out.toAbsolutePath.getParent)
    Files.write(out, text.getBytes(StandardCharsets.UTF_8))
    println(s"wrote $out")
  }
}
