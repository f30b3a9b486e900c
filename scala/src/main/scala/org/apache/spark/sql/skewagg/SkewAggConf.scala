package org.apache.spark.sql.skewagg

import org.apache.spark.internal.config.ConfigEntry
import org.apache.spark.sql.internal.SQLConf

/**
 * Every skewagg setting. Keys are `spark.skewagg.<area>.<name>`; booleans end in `.enabled`.
 * Each entry has a doc, a default and the version it appeared in. The entries are registered
 * with Spark's SQLConf, so `spark.conf.set` rejects an invalid value when it is set, naming the
 * key. `docs/configs.md` is generated from [[SkewAggConf.entries]] (`make docs`).
 *
 * All entries are runtime settings: rules read them when they run, so one session can compare a
 * query with skewagg off and on.
 */
object SkewAggConf {
  private var registered = Vector.empty[ConfigEntry[_]]

  private def buildConf(key: String) = {
    require(key.startsWith("spark.skewagg."), s"skewagg config key outside spark.skewagg.*: $key")
    SQLConf.buildConf(key) // registers the entry with SQLConf when created
  }

  private def listed[T](entry: ConfigEntry[T]): ConfigEntry[T] = {
    registered :+= entry
    entry
  }

  val ENABLED: ConfigEntry[Boolean] = listed(buildConf("spark.skewagg.enabled")
    .doc("Master switch. When false, every skewagg rule leaves the plan exactly as vanilla " +
      "Spark would plan it. Can be changed at any time in a running session.")
    .version("0.1.0")
    .booleanConf
    .createWithDefault(true))

  val REPARTITION_ENABLED: ConfigEntry[Boolean] = listed(
    buildConf("spark.skewagg.repartition.enabled")
      .doc("Aggregate partially before a user repartition (`repartition(k)`, `DISTRIBUTE BY k`) " +
        "whose keys are among the aggregate's grouping keys, so the shuffle moves one partial " +
        "row per key and map task instead of every row. Never moves more rows than the plan " +
        "it replaces, so it applies without skew detection. The user's output partitioning is " +
        "kept.")
      .version("0.1.0")
      .booleanConf
      .createWithDefault(true))

  /** Every entry, in declaration order. */
  def entries: Seq[ConfigEntry[_]] = registered

  def enabled(conf: SQLConf): Boolean = conf.getConf(ENABLED)

  /** True when skewagg as a whole and `entry` are both on. */
  def enabled(conf: SQLConf, entry: ConfigEntry[Boolean]): Boolean =
    conf.getConf(ENABLED) && conf.getConf(entry)
}
