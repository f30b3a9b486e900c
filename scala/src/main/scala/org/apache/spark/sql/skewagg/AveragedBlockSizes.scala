package org.apache.spark.sql.skewagg

import java.util.concurrent.atomic.AtomicBoolean

import scala.util.Try

import org.apache.spark.{SparkConf, SparkContext, SparkEnv}
import org.apache.spark.internal.Logging
import org.apache.spark.internal.config.{
  SHUFFLE_ACCURATE_BLOCK_SKEWED_FACTOR, SHUFFLE_ACCURATE_BLOCK_THRESHOLD,
  SHUFFLE_MIN_NUM_PARTS_TO_HIGHLY_COMPRESS
}
import org.apache.spark.sql.internal.SQLConf

/**
 * Whether Spark recorded a shuffle's block sizes exactly enough for a skew test to see a hot key.
 *
 * A map task of a shuffle of more than `spark.shuffle.minNumPartitionsToHighlyCompress` (2000)
 * partitions reports one average size for all of its blocks below
 * `spark.shuffle.accurateBlockThreshold` (100 MB), unless `spark.shuffle.accurateBlockSkewedFactor`
 * is above 0: then its blocks larger than that factor times its median block are recorded as they
 * are (at most `spark.shuffle.maxAccurateSkewedBlockNumber`, 100, per map task). Every partition
 * size a run-time rule reads is a sum of those blocks, so on averaged sizes a hot partition looks
 * like the others. All three are application settings, read where the map tasks run: only the
 * application's start can set them (`skewagg.configure()` does; docs/production.md says why its
 * value is `spark.skewagg.skew.factor`).
 */
object AveragedBlockSizes extends Logging {

  /** The Spark setting that keeps a skewed block's size. */
  val FactorKey: String = SHUFFLE_ACCURATE_BLOCK_SKEWED_FACTOR.key

  /**
   * A shuffle of `partitions` partitions, above `minPartitions`, whose map tasks recorded their
   * blocks below `exactAbove` bytes at their average size.
   */
  case class Averaged(partitions: Int, minPartitions: Int, exactAbove: Long) {

    /** Why a hot key cannot be seen here, and the setting that shows it. */
    def text(factor: Double): String =
      s"Spark recorded every map task's blocks below ${SkewAggLocalStageExec.bytes(exactAbove)} " +
        s"(${SHUFFLE_ACCURATE_BLOCK_THRESHOLD.key}) at their average size, as it does for more " +
        s"than $minPartitions partitions (${SHUFFLE_MIN_NUM_PARTS_TO_HIGHLY_COMPRESS.key}; this " +
        f"shuffle has $partitions%,d) while $FactorKey is unset, so a hot key cannot be seen. " +
        s"${setting(factor)}"
  }

  /** The application setting to add, e.g. "Set ...=5.0 when the application starts (...)". */
  private def setting(factor: Double): String =
    s"Set $FactorKey=$factor when the application starts (skewagg.configure() sets it; " +
      s"spark-submit --conf $FactorKey=$factor)."

  /** Whether the running application's map tasks average the blocks of `partitions` partitions. */
  def of(partitions: Int): Option[Averaged] =
    Option(SparkEnv.get).map(_.conf).flatMap(of(partitions, _))

  /** Whether map tasks under the application settings `conf` average `partitions` partitions. */
  def of(partitions: Int, conf: SparkConf): Option[Averaged] = {
    val minPartitions = conf.get(SHUFFLE_MIN_NUM_PARTS_TO_HIGHLY_COMPRESS)
    if (partitions <= minPartitions || conf.get(SHUFFLE_ACCURATE_BLOCK_SKEWED_FACTOR) > 0) None
    else Some(Averaged(partitions, minPartitions, conf.get(SHUFFLE_ACCURATE_BLOCK_THRESHOLD)))
  }

  /**
   * [[of]] for a shuffle a rule measured, warning in the log (once per JVM, with
   * [[warnAtSessionStart]]) when its sizes were averaged.
   */
  def measured(partitions: Int, conf: SQLConf): Option[Averaged] = {
    val averaged = of(partitions)
    averaged.foreach { a =>
      warnOnce(s"A shuffle of ${a.partitions} partitions was measured on averaged sizes. " +
        a.text(conf.getConf(SkewAggConf.SKEW_FACTOR)))
    }
    averaged
  }

  /** At session start: [[sessionStartWarning]] for the running application, logged once. */
  def warnAtSessionStart(): Unit =
    SparkContext.getActive.flatMap(sc => sessionStartWarning(sc.conf)).foreach(warnOnce)

  /**
   * The warning for an application of `conf` whose shuffles can have more partitions than Spark
   * records exactly (`spark.sql.shuffle.partitions` or adaptive execution's initial partition
   * number above the limit) while the factor is unset; None when they cannot.
   */
  def sessionStartWarning(conf: SparkConf): Option[String] = {
    val planned = Seq(
      SQLConf.SHUFFLE_PARTITIONS.key,
      SQLConf.COALESCE_PARTITIONS_INITIAL_PARTITION_NUM.key).flatMap { key =>
      conf.getOption(key).flatMap(v => Try(v.trim.toInt).toOption).map(key -> _)
    }
    val factor = conf.getOption(SkewAggConf.SKEW_FACTOR.key)
      .flatMap(v => Try(v.trim.toDouble).toOption)
      .getOrElse(SkewAggConf.SKEW_FACTOR.defaultValue.get)
    planned.flatMap { case (key, n) =>
      of(n, conf).map { averaged =>
        s"This application's shuffles can have $n partitions ($key=$n). " +
          averaged.text(factor) + " skewagg's run-time rules (and Spark's own skew join) " +
          "read those sizes."
      }
    }.headOption
  }

  private val warned = new AtomicBoolean(false)

  private def warnOnce(message: String): Unit =
    if (warned.compareAndSet(false, true)) logWarning(message)
}
