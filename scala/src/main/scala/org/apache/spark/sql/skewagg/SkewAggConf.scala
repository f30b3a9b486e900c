package org.apache.spark.sql.skewagg

import scala.util.control.NonFatal

import org.apache.spark.{SparkConf, SparkContext}
import org.apache.spark.internal.config.{ConfigBuilder, ConfigEntry, TypedConfigBuilder}
import org.apache.spark.network.util.ByteUnit
import org.apache.spark.sql.internal.SQLConf

/**
 * Every skewagg setting. Keys are `spark.skewagg.<area>.<name>`; booleans end in `.enabled`.
 * Each entry has a doc, a default and the version it appeared in. The entries are registered
 * with Spark's SQLConf, so an invalid value is rejected when it is set (`spark.conf.set`, SQL
 * `SET`, the session builder's or spark-submit's config) with one message naming the key, the
 * value and the valid values ([[SkewAggConf.validValues]]). `docs/configs.md` is generated from
 * [[SkewAggConf.entries]] (`make docs`).
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
    require(
      valid.contains(entry.key),
      s"${entry.key} has no valid values: build it with " +
        "trueOrFalse, intAtLeast, intBetween, longAtLeast, doubleAtLeast, fraction or bytesAtLeast")
    registered :+= entry
    entry
  }

  /** What an entry accepts, in words, and values it rejects (listed by the tests and docs). */
  case class ValidValues(description: String, invalidExamples: Seq[String])

  private var valid = Map.empty[String, ValidValues]

  /** The message of every rejected value: the key, the value and what is valid. */
  def invalidValueMessage(key: String, value: String): String =
    s"Invalid value '$value' for $key: must be ${valid(key).description}."

  private implicit class Checked(builder: ConfigBuilder) {
    def trueOrFalse: TypedConfigBuilder[Boolean] =
      checked(builder.booleanConf, ValidValues("true or false", Seq("maybe", "1", "")))

    def intAtLeast(min: Int): TypedConfigBuilder[Int] =
      checked(
        builder.intConf,
        ValidValues(
          s"an integer of at least $min",
          Seq("abc", "1.5", (min.toLong - 1).toString, "99999999999")),
        (_: Int) >= min)

    def intBetween(min: Int, max: Int): TypedConfigBuilder[Int] =
      checked(
        builder.intConf,
        ValidValues(
          s"an integer from $min to $max",
          Seq("abc", "1.5", (min.toLong - 1).toString, (max.toLong + 1).toString)),
        (v: Int) => v >= min && v <= max)

    def longAtLeast(min: Long): TypedConfigBuilder[Long] =
      checked(
        builder.longConf,
        ValidValues(s"an integer of at least $min", Seq("abc", "1.5", (min - 1).toString)),
        (_: Long) >= min)

    /** A fraction in (0, 1]. */
    def fraction: TypedConfigBuilder[Double] =
      checked(
        builder.doubleConf,
        ValidValues("a number greater than 0 and at most 1", Seq("abc", "0", "1.5", "NaN")),
        (v: Double) => v > 0.0 && v <= 1.0)

    def doubleAtLeast(min: Double): TypedConfigBuilder[Double] =
      checked(
        builder.doubleConf,
        ValidValues(
          s"a finite number of at least $min",
          Seq("abc", (min - 0.5).toString, "NaN", "Infinity")),
        (v: Double) => v >= min && !v.isInfinite)

    /** Empty, or a name such as a class name: letters and digits. */
    def nameOrEmpty: TypedConfigBuilder[String] =
      checked(
        builder.stringConf,
        ValidValues("empty, or a name of letters and digits", Seq("no such rule!", "1x")),
        (v: String) => v.matches("([A-Za-z][A-Za-z0-9]*)?"))

    def bytesAtLeast(min: Long): TypedConfigBuilder[Long] =
      checked(
        builder.bytesConf(ByteUnit.BYTE),
        ValidValues(
          s"a size of at least ${min}b, in bytes or with a unit such as 512k, 16m, 1g",
          Seq("abc", "12 parsecs", (min - 1).toString)),
        (_: Long) >= min)

    /** `base` whose converter also rejects what `ok` refuses, with [[invalidValueMessage]]. */
    private def checked[T](
        base: TypedConfigBuilder[T],
        values: ValidValues,
        ok: T => Boolean = (_: T) => true): TypedConfigBuilder[T] = {
      val key = builder.key
      valid += key -> values
      def reject(value: String) =
        throw new IllegalArgumentException(invalidValueMessage(key, value))
      new TypedConfigBuilder[T](
        builder,
        { value =>
          val parsed =
            try base.converter(value)
            catch { case NonFatal(_) => reject(value) }
          if (!ok(parsed)) reject(value)
          parsed
        },
        base.stringConverter)
    }
  }

  /**
   * Fails with [[invalidValueMessage]] on the first invalid skewagg value in `conf` (a job's
   * Spark config), so a session whose config has one fails when it starts, saying which.
   */
  def checkValues(conf: SparkConf): Unit =
    entries.foreach(e => conf.getOption(e.key).foreach(e.valueConverter))

  /**
   * At session start: registers the settings with SQLConf (this object's initialisation) and
   * checks the running SparkContext's config ([[checkValues]]), so an invalid value fails
   * `getOrCreate()` naming the key, not the session's first query inside Spark.
   */
  def registerAndCheckActiveContext(): Unit =
    SparkContext.getActive.foreach(sc => checkValues(sc.conf))

  /** What `entry` accepts. */
  def validValues(entry: ConfigEntry[_]): ValidValues = valid(entry.key)

  val ENABLED: ConfigEntry[Boolean] = listed(buildConf("spark.skewagg.enabled")
    .doc("Master switch. When false, every skewagg rule leaves the plan exactly as vanilla " +
      "Spark would plan it. Can be changed at any time in a running session.")
    .version("0.1.0")
    .trueOrFalse
    .createWithDefault(true))

  val REPARTITION_ENABLED: ConfigEntry[Boolean] = listed(
    buildConf("spark.skewagg.repartition.enabled")
      .doc("Aggregates above a user repartition (`repartition(k)`, `DISTRIBUTE BY k`) on " +
        "grouping keys: with adaptive execution, when the repartition's shuffle has skewed " +
        "partitions, read them in splits, aggregate partially per split and exchange the " +
        "partials with the user's own partitioning; with the SKEW_AGG hint, aggregate " +
        "partially before the user's shuffle. The user's output partitioning is kept.")
      .version("0.1.0")
      .trueOrFalse
      .createWithDefault(true))

  val REPARTITION_LOCAL_AGGREGATE_ENABLED: ConfigEntry[Boolean] = listed(
    buildConf("spark.skewagg.repartition.localAggregate.enabled")
      .doc("Without a hint, aggregate partially before a user repartition on grouping keys " +
        "with a flushing local aggregate (spark.skewagg.localAggregate.*), which merges the " +
        "keys that repeat, such as a hot key, and passes other rows through. Holistic " +
        "aggregates are left to the run-time split. Needs spark.skewagg.repartition.enabled.")
      .version("0.1.0")
      .trueOrFalse
      .createWithDefault(true))

  val SKEW_FACTOR: ConfigEntry[Double] = listed(
    buildConf("spark.skewagg.skew.factor")
      .doc("A partition (of a shuffle, or a bucket) is skewed when it is larger than this many " +
        "times the per-slot share of its stage (its total / spark.skewagg.skew.taskSlots), " +
        "however large the other partitions are, and than spark.skewagg.skew.minPartitionSize. " +
        "The hot-key split of holistic aggregates splits " +
        "a key only above this many times the per-slot share of the input's rows.")
      .version("0.1.0")
      .doubleAtLeast(1.0)
      .createWithDefault(5.0))

  val SKEW_MIN_PARTITION_SIZE: ConfigEntry[Long] = listed(
    buildConf("spark.skewagg.skew.minPartitionSize")
      .doc("The absolute floor of skew: a shuffle partition no larger than this is never " +
        "treated as skewed, whatever its share of the stage. Spark's own skew join uses 256MB; " +
        "skewagg's rewrites add only a cheap exchange of partial results, so a lower floor pays.")
      .version("0.1.0")
      .bytesAtLeast(0)
      .createWithDefaultString("16MB"))

  val SKEW_TASK_SLOTS: ConfigEntry[Int] = listed(
    buildConf("spark.skewagg.skew.taskSlots")
      .doc("The task slots a split is planned for; 0 (the default) means the application's, " +
        "as the running SparkContext reports them (executors x cores per executor / cpus per " +
        "task). A partition is split only when it is larger than spark.skewagg.skew.factor " +
        "times the per-slot share of its stage (the stage's total / slots): on 2 slots a " +
        "partition holding 30% of the stage is shorter than an even share and is left alone; " +
        "on 64 it is 19 times that share. Set it to plan for a bigger cluster than this one.")
      .version("0.1.0")
      .intAtLeast(0)
      .createWithDefault(0))

  val SKEW_MIN_SPLIT_SIZE: ConfigEntry[Long] = listed(
    buildConf("spark.skewagg.skew.minSplitSize")
      .doc("A skewed shuffle partition is split into pieces of about the average size of the " +
        "partitions that are not skewed, but no smaller than this (and never into more pieces " +
        "than the shuffle has map tasks); an aggregate's split, into pieces of at least a " +
        "quarter of the per-slot share of its stage (at most about 4 pieces per slot, however " +
        "many partitions are skewed). Spark's skew join uses " +
        "spark.sql.adaptive.advisoryPartitionSizeInBytes (64MB) here, which leaves a hot " +
        "partition below that size unsplit. Where a shuffle is measured in rows (below a " +
        "DISTINCT's first step), pieces are weighed at their rows' size in memory, as " +
        "spark.skewagg.skew.minPartitionSize is.")
      .version("0.1.0")
      .bytesAtLeast(1)
      .createWithDefaultString("1MB"))

  val JOIN_SKEW_SPLIT_ENABLED: ConfigEntry[Boolean] = listed(
    buildConf("spark.skewagg.join.skewSplit.enabled")
      .doc("Adaptive execution only: when the shuffle stages of a sort-merge or shuffled-hash " +
        "join below an aggregate show skewed partitions, split them as Spark's skew join does " +
        "and add an exchange of the partial aggregate's results before the final aggregate. " +
        "AQE accepts that plan only with a cost model that knows such an exchange is cheap: " +
        "spark.sql.adaptive.customCostEvaluatorClass=io.skewagg.SkewAggCostEvaluator (set by " +
        "skewagg.configure() unless another evaluator is set).")
      .version("0.1.0")
      .trueOrFalse
      .createWithDefault(true))

  val JOIN_LOCAL_AGGREGATE_ENABLED: ConfigEntry[Boolean] = listed(
    buildConf("spark.skewagg.join.localAggregate.enabled")
      .doc("For an aggregate over a shuffled join whose aggregate functions read one side " +
        "only: aggregate that side partially before the join (by its grouping and join " +
        "columns), join the partial results, and merge them after the join. With the SKEW_AGG " +
        "hint, every row is aggregated (Spark's partial aggregate); without it, a flushing " +
        "local aggregate (spark.skewagg.localAggregate.*) aggregates only while that measurably " +
        "reduces rows, so a hot key collapses and uniform keys pass through. DISTINCT-only " +
        "aggregates deduplicate that side's rows instead.")
      .version("0.1.0")
      .trueOrFalse
      .createWithDefault(true))

  val LOCAL_AGGREGATE_CAPACITY: ConfigEntry[Int] = listed(
    buildConf("spark.skewagg.localAggregate.capacity")
      .doc("Keys a flushing local aggregate (the unhinted partial aggregate before a join) " +
        "holds per task. When its map is full it emits its partial rows instead of spilling, " +
        "so its memory is bounded by this many keys' buffers.")
      .version("0.1.0")
      .intBetween(16, 1 << 24)
      .createWithDefault(16384))

  val LOCAL_AGGREGATE_MIN_REDUCTION: ConfigEntry[Double] = listed(
    buildConf("spark.skewagg.localAggregate.minReduction")
      .doc("A flushing local aggregate keeps aggregating every key while a batch of " +
        "spark.skewagg.localAggregate.capacity keys merged at least this many rows per key; " +
        "below it, it keeps only the batch's heavy keys (8 times the batch's mean rows per " +
        "key, or per key of the shuffle above when that hashes on fewer columns) and passes " +
        "other rows through, learning again after 16 x capacity rows (twice as " +
        "many each time relearning passes rows through again, at most 256 x capacity).")
      .version("0.1.0")
      .doubleAtLeast(1.0)
      .createWithDefault(2.0))

  val LOCAL_AGGREGATE_MIN_MERGE_REDUCTION: ConfigEntry[Double] = listed(
    buildConf("spark.skewagg.localAggregate.minMergeReduction")
      .doc("Adaptive execution only: the partial rows a flushing local aggregate sends to a " +
        "shuffled join are merged after the join's shuffle only when its tasks emitted at " +
        "least this many rows per distinct key (estimated by a sketch of the keys they " +
        "emitted); below it the merge would cost more than the rows it saves (keys that are " +
        "nearly unique, such as a table's primary key), and the join reads the partial rows " +
        "as they are. 1.0 always merges.")
      .version("0.1.0")
      .doubleAtLeast(1.0)
      .createWithDefault(3.0))

  val BUCKETED_ENABLED: ConfigEntry[Boolean] = listed(
    buildConf("spark.skewagg.bucketed.enabled")
      .doc("When an aggregate reads a bucketed table on its grouping keys and the bucket file " +
        "sizes are skewed (spark.skewagg.skew.*), read the skewed buckets without bucketing, " +
        "so their files are split across tasks, and exchange only their partial aggregates; " +
        "the other buckets are aggregated as before. Decided at planning, with and without " +
        "adaptive execution, by rows from the Parquet footers (a hot key compresses to few " +
        "bytes per row), else by file sizes; the skewed buckets of Parquet files are read in " +
        "pieces of about equal rows, cut at row group starts.")
      .version("0.1.0")
      .trueOrFalse
      .createWithDefault(true))

  val BUCKETED_MAX_FOOTERS: ConfigEntry[Int] = listed(
    buildConf("spark.skewagg.bucketed.maxFootersRead")
      .doc("The most Parquet footers the bucketed split reads on the driver at planning to " +
        "count each bucket's rows; a bucketed scan of more files (or of another format) is " +
        "decided by file sizes and its skewed buckets are read in Spark's byte-sized splits. " +
        "0 never reads footers.")
      .version("0.1.0")
      .intAtLeast(0)
      .createWithDefault(1000))

  val EXCHANGE_COALESCE_ENABLED: ConfigEntry[Boolean] = listed(
    buildConf("spark.skewagg.exchange.coalesce.enabled")
      .doc("Adaptive execution only: read the exchanges of partial results that skewagg adds " +
        "(one row per key and split) in coalesced partitions, as Spark's " +
        "spark.sql.adaptive.coalescePartitions does, even when that setting is off: they " +
        "exist only in skewagg's plans, and hundreds of tiny reduce tasks cost more than the " +
        "merge they run. Exchanges that keep a user's repartition are left as they are.")
      .version("0.1.0")
      .trueOrFalse
      .createWithDefault(true))

  val PARTIAL_STATES_SPLIT_ENABLED: ConfigEntry[Boolean] = listed(
    buildConf("spark.skewagg.partialStates.split.enabled")
      .doc("Adaptive execution only: where the final half of Spark's own aggregate merges heavy " +
        "partial states (sketches, collected lists: see " +
        "spark.skewagg.partialStates.split.minStateSize) and a partition of their exchange is " +
        "skewed against the per-slot share (a few keys), read that partition's n map outputs " +
        "in pieces of about sqrt(n) of them (at least the per-slot share), merge each piece's " +
        "states in its own task, exchange the merged states on the grouping keys and merge " +
        "them once more: the final merge of a key reads one state per piece instead of one " +
        "per map task. From 16 map tasks writing to the partition; Spark's plan below.")
      .version("0.1.0")
      .trueOrFalse
      .createWithDefault(true))

  val PARTIAL_STATES_MIN_STATE_SIZE: ConfigEntry[Long] = listed(
    buildConf("spark.skewagg.partialStates.split.minStateSize")
      .doc("The average size of a partial state (the exchange's bytes over its rows) from which " +
        "merging the states is the work of an aggregate's final half, so that a skewed " +
        "partition of them is merged in two levels. A sum's or count's state is tens of bytes, " +
        "whose merge is cheap: Spark's plan stays.")
      .version("0.1.0")
      .bytesAtLeast(1)
      .createWithDefaultString("1KB"))

  val SINGLE_KEY_ENABLED: ConfigEntry[Boolean] = listed(
    buildConf("spark.skewagg.singleKey.enabled")
      .doc("Batch aggregates with exact percentile, median, percentile_cont, percentile_disc or " +
        "mode run one grouping key at a time (SingleKeyAggregate): the raw rows are shuffled " +
        "once by the keys, sorted by the keys and the function's value with Spark's external " +
        "sorter, and each function reads its key's values in order instead of building a " +
        "value->count map per key. Other functions in the same aggregate run alongside.")
      .version("0.1.0")
      .trueOrFalse
      .createWithDefault(true))

  val SINGLE_KEY_COLLECT_ENABLED: ConfigEntry[Boolean] = listed(
    buildConf("spark.skewagg.singleKey.collect.enabled")
      .doc("Also run aggregates whose only holistic functions are collect_list / collect_set " +
        "one key at a time (shuffling raw rows once instead of per-key partial lists). Off by " +
        "default: docs/single-key.md has the measurements.")
      .version("0.1.0")
      .trueOrFalse
      .createWithDefault(false))

  val SINGLE_KEY_TYPED_AGGREGATE_ENABLED: ConfigEntry[Boolean] = listed(
    buildConf("spark.skewagg.singleKey.typedAggregate.enabled")
      .doc("Also run aggregates with typed Aggregators registered with udaf() (and no other " +
        "holistic function) one key at a time, shuffling raw rows once instead of partial " +
        "object buffers. Pays with many keys, when Spark's object hash aggregate falls back " +
        "to sorting; off by default because a hot key's rows then go to one task: " +
        "docs/single-key.md has the measurements.")
      .version("0.1.0")
      .trueOrFalse
      .createWithDefault(false))

  val SINGLE_KEY_SPLIT_ENABLED: ConfigEntry[Boolean] = listed(
    buildConf("spark.skewagg.singleKey.split.enabled")
      .doc("Exact percentiles of hot keys split across tasks: aggregates whose holistic " +
        "functions are all percentile / median / percentile_cont / percentile_disc (without " +
        "FILTER) and whose other functions have fixed-size buffers (sum, count, avg, min, " +
        "max, ...) sample their input first; a key estimated at least " +
        "spark.skewagg.singleKey.split.minKeyRows rows and larger than an average shuffle " +
        "partition is range-partitioned by value into several tasks, each of which knows its " +
        "rank offset within the key (HotKeySplitAggregate). The sample costs one more pass " +
        "over part of the aggregate's input (spark.skewagg.singleKey.split.sampleFraction). " +
        "docs/single-key.md describes the design.")
      .version("0.1.0")
      .trueOrFalse
      .createWithDefault(true))

  val SINGLE_KEY_SPLIT_MIN_KEY_ROWS: ConfigEntry[Long] = listed(
    buildConf("spark.skewagg.singleKey.split.minKeyRows")
      .doc("HotKeySplitAggregate: a key is split only when the sample estimates at least this " +
        "many input rows for it. It is split into about (its rows / the average rows of one of " +
        "the spark.sql.shuffle.partitions partitions) tasks, at most " +
        "spark.skewagg.singleKey.split.maxSplits.")
      .version("0.1.0")
      .longAtLeast(1)
      .createWithDefault(1000000L))

  val SINGLE_KEY_SPLIT_MAX_SPLITS: ConfigEntry[Int] = listed(
    buildConf("spark.skewagg.singleKey.split.maxSplits")
      .doc("HotKeySplitAggregate: the largest number of tasks one hot key is split into.")
      .version("0.1.0")
      .intAtLeast(2)
      .createWithDefault(256))

  val SINGLE_KEY_SPLIT_SAMPLE_SIZE: ConfigEntry[Int] = listed(
    buildConf("spark.skewagg.singleKey.split.sampleSize")
      .doc("HotKeySplitAggregate: how many input rows (keys and values) the sample that finds " +
        "hot keys and their value ranges keeps in total, spread evenly over the partitions it " +
        "reads. A key's share of the sample estimates its share of the input.")
      .version("0.1.0")
      .intAtLeast(1)
      .createWithDefault(100000))

  val SINGLE_KEY_SPLIT_SAMPLE_FRACTION: ConfigEntry[Double] = listed(
    buildConf("spark.skewagg.singleKey.split.sampleFraction")
      .doc("HotKeySplitAggregate: the fraction of the input's partitions the sample reads (at " +
        "least one, evenly spaced): the sample computes them a second time, so this is its " +
        "cost. A hot key concentrated in partitions the sample skips is not split (its result " +
        "is exact either way). 1.0 reads every partition.")
      .version("0.1.0")
      .fraction
      .createWithDefault(0.1))

  val SINGLE_KEY_BUFFER_IN_MEMORY_ROWS: ConfigEntry[Int] = listed(
    buildConf("spark.skewagg.singleKey.buffer.inMemoryRows")
      .doc("SingleKeyAggregate: a percentile function holds up to this many of a key's values " +
        "as separate rows in memory; beyond it they go to a spillable buffer of binary rows " +
        "(Spark's ExternalAppendOnlyUnsafeRowArray) in execution memory.")
      .version("0.1.0")
      .intAtLeast(0)
      .createWithDefault(4096))

  val SINGLE_KEY_BUFFER_SPILL_ROWS: ConfigEntry[Int] = listed(
    buildConf("spark.skewagg.singleKey.buffer.spillRows")
      .doc("SingleKeyAggregate: a percentile function's buffer of one key's values spills to " +
        "disk after this many rows even when execution memory is left (it also spills when " +
        "execution memory runs out).")
      .version("0.1.0")
      .intAtLeast(1)
      .createWithDefault(Int.MaxValue))

  val WINDOW_ENABLED: ConfigEntry[Boolean] = listed(
    buildConf("spark.skewagg.window.enabled")
      .doc("Batch window functions over a skewed window partition: when a partition of the " +
        "window's shuffle is skewed (spark.skewagg.skew.*; found by adaptive execution, or " +
        "without it by the operator once the shuffle has run), its hot keys " +
        "are split by ranges of the window's ORDER BY across several tasks, each of which " +
        "learns from the splits before it where its rows stand (rows, peer groups, partial " +
        "aggregates), so every row gets Spark's own result (HotKeySplitWindow). Whole-partition " +
        "and running frames of count, sum, min, max and avg, and row_number, rank, " +
        "dense_rank, percent_rank, cume_dist and ntile are split; docs/window.md lists what " +
        "is not and why.")
      .version("0.1.0")
      .trueOrFalse
      .createWithDefault(true))

  val WINDOW_SPLIT_MIN_KEY_ROWS: ConfigEntry[Long] = listed(
    buildConf("spark.skewagg.window.split.minKeyRows")
      .doc("HotKeySplitWindow: a key of a skewed window partition is split only when a sample " +
        "of that partition estimates at least this many rows for it. It is split into about " +
        "(its rows / the rows of one piece of the skewed partition, pieces of " +
        "spark.skewagg.skew.minSplitSize or the average partition) tasks, at most " +
        "spark.skewagg.window.split.maxSplits.")
      .version("0.1.0")
      .longAtLeast(1)
      .createWithDefault(1000000L))

  val WINDOW_SPLIT_MAX_SPLITS: ConfigEntry[Int] = listed(
    buildConf("spark.skewagg.window.split.maxSplits")
      .doc("HotKeySplitWindow: the largest number of tasks one hot key is split into.")
      .version("0.1.0")
      .intAtLeast(2)
      .createWithDefault(256))

  val WINDOW_SPLIT_MAX_RANGE_FRAME_ROWS: ConfigEntry[Int] = listed(
    buildConf("spark.skewagg.window.split.maxRangeFrameRows")
      .doc("HotKeySplitWindow: the most rows at either edge of a split that a bounded RANGE " +
        "frame (RANGE BETWEEN 7 PRECEDING AND CURRENT ROW) may reach from outside it. Each " +
        "split's edge rows go to the driver and to the splits around it; a key whose frames " +
        "reach more rows across an edge runs in Spark's window, and the explanation says so.")
      .version("0.1.0")
      .intAtLeast(1)
      .createWithDefault(10000))

  val WINDOW_SPLIT_SAMPLE_SIZE: ConfigEntry[Int] = listed(
    buildConf("spark.skewagg.window.split.sampleSize")
      .doc("HotKeySplitWindow: how many rows (keys and ORDER BY values) of the skewed " +
        "partitions the sample that finds hot keys and their order ranges keeps in total. " +
        "Estimates only decide where rows go, never a result.")
      .version("0.1.0")
      .intAtLeast(1)
      .createWithDefault(100000))

  val WINDOW_SPLIT_SAMPLE_FRACTION: ConfigEntry[Double] = listed(
    buildConf("spark.skewagg.window.split.sampleFraction")
      .doc("HotKeySplitWindow: about this fraction of the skewed partitions' map outputs is " +
        "read by the sample, chosen in proportion to their size (evenly spaced over their " +
        "bytes, at least one per skewed partition and at least as many as the ranges they may " +
        "be cut into, up to spark.skewagg.window.split.maxSplits, so an order that follows " +
        "the input's files is cut across all of it; a map output holding a larger share of " +
        "the bytes is always read), so a hot key concentrated in a few map outputs is seen. " +
        "1.0 reads every map output. Estimates only decide where rows go, never a result.")
      .version("0.1.0")
      .fraction
      .createWithDefault(0.1))

  val WINDOW_SPLIT_FLOATING_POINT_ENABLED: ConfigEntry[Boolean] = listed(
    buildConf("spark.skewagg.window.split.floatingPoint.enabled")
      .doc("Also split windows with an ORDER BY whose sum or avg adds float or double values " +
        "(or avg adds integral values in a double). Spark adds them one row at a time in " +
        "the window's order; a split adds each range apart and then the ranges, so results " +
        "may differ from Spark's in the last digits. Off by default: such windows keep " +
        "Spark's plan. Windows without ORDER BY are split either way (Spark's own order of " +
        "addition there is the order rows arrive in).")
      .version("0.1.0")
      .trueOrFalse
      .createWithDefault(false))

  val TEST_WINDOW_MAX_RANKED_ROWS: ConfigEntry[Long] = listed(
    buildConf("spark.skewagg.test.window.maxRankedRows")
      .internal()
      .doc("Tests only: HotKeySplitWindow leaves a hot key of more rows than this to Spark's " +
        "window when a ranking function numbers its rows (Spark's ints: 2147483647), so tests " +
        "can reach that path with small keys.")
      .version("0.1.0")
      .longAtLeast(0)
      .createWithDefault(Int.MaxValue.toLong))

  val TEST_FAIL_RULE: ConfigEntry[String] = listed(
    buildConf("spark.skewagg.test.failRule")
      .internal()
      .doc("Tests only: the skewagg rule or strategy of this name (its class name, such as " +
        "LocalAggregateBeforeJoin) throws where it runs, so tests can check that the query " +
        "falls back to Spark's own plan for that step (PlanningFallback).")
      .version("0.1.0")
      .nameOrEmpty
      .createWithDefault(""))

  /** Every entry, in declaration order. */
  def entries: Seq[ConfigEntry[_]] = registered

  /** The default of the setting `key`, as its entry prints it (e.g. "16MB"); fails if unknown. */
  def defaultOf(key: String): String = registered.find(_.key == key)
    .getOrElse(throw new IllegalArgumentException(s"not a skewagg setting: $key"))
    .defaultValueString

  def enabled(conf: SQLConf): Boolean = conf.getConf(ENABLED)

  /** True when skewagg as a whole and `entry` are both on. */
  def enabled(conf: SQLConf, entry: ConfigEntry[Boolean]): Boolean =
    conf.getConf(ENABLED) && conf.getConf(entry)
}
