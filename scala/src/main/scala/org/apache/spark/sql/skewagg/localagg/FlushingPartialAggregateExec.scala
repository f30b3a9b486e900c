package org.apache.spark.sql.skewagg.localagg

import org.apache.spark.TaskContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute, AttributeMap, AttributeReference, AttributeSet, BindReferences, BoundReference,
  Expression, If, MutableProjection, NamedExpression, UnsafeProjection, XXH64, XxHash64
}
import org.apache.spark.sql.catalyst.expressions.aggregate.{
  AggregateExpression, AggregateFunction, DeclarativeAggregate, Partial
}
import org.apache.spark.sql.catalyst.expressions.codegen.{
  CodegenContext, ExprCode, GenerateUnsafeProjection
}
import org.apache.spark.sql.execution.{
  CodegenSupport, SparkPlan, UnaryExecNode, WholeStageCodegenExec
}
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.skewagg.{BottomPartialAggregateExec, SkewAggConf, SkewAggLocalStageExec}
import org.apache.spark.sql.types.{
  DataType, DateType, IntegerType, LongType, TimestampNTZType, TimestampType
}

/**
 * A partial aggregate that flushes instead of spilling, and aggregates only where it pays.
 *
 * It keeps at most `capacity` keys in memory. While it learns, every key goes into the map; when
 * the map is full it emits all its partial rows (a flush) and measures the batch: rows read per
 * key kept. When that reduction is at least `minReduction` it goes on learning; when it is lower,
 * it keeps only the batch's heavy keys (at least `HeavyFactor` = 8 times the batch's mean rows per
 * key), merges their rows in place and passes every other row through as a one-row partial, then
 * learns again after `FirstRelearnCapacities` = 16 x capacity rows, `RelearnGrowth` = twice as
 * many after each relearning that passes rows through again (at most `MaxRelearnCapacities` =
 * 256 x capacity). A hot key therefore leaves a task as a handful of rows, while
 * uniform keys cost one probe of a small map per row: never a spill, never a hash table of all
 * keys. A key of one integral column is mapped by its value ([[GroupingKeyMap.ByValue]]).
 *
 * `shuffleKeys`, when the exchange above hashes on fewer columns than the grouping key (a join
 * key or `repartition(k)` below `GROUP BY k, x`, a DISTINCT column), are that exchange's keys:
 * a batch then also keeps every key whose shuffle key is heavy, since it is the shuffle key that
 * puts rows in one task: a hot shuffle key spread over many grouping keys, each too rare to be
 * heavy alone, is merged too. Shuffle keys are counted in 2^`ShuffleBucketBits` = 4096 hash
 * buckets (no allocation per key); a bucket is heavy when it holds at least `HeavyFactor` times
 * the batch's mean rows per bucket used.
 *
 * Kept keys are on trial: when the first `capacity` rows probed after a batch kept them merged into
 * them at less than `KeptKeysMinHitShare` (half) of the share of rows they held in that batch (a
 * hot shuffle key spread over many more values than the batch saw: each kept value is rarely seen
 * again), their buffers are emitted and rows pass through without a probe until the next learning.
 * Once a trial of an earlier task of the same run, in the same JVM, dropped its kept keys
 * ([[LearnedReductions]]), a trial is judged after a quarter as many rows (`EarlyDecisionFraction`,
 * when that is at least `EarlyDecisionMinKeys` rows).
 *
 * Relearning decides early, at a quarter of the map (`EarlyDecisionFraction`, when that is at least
 * `EarlyDecisionMinKeys` = 1024 keys), when the keys other than the heavy ones merged fewer than
 * `1 + (minReduction - 1) / EarlyReductionDivisor` (10) rows per key: for uniform keys such a
 * quarter batch means the whole batch would reduce less than `minReduction`, so its other three
 * quarters would only cost map probes. The first batch of a task always fills the map: keys that
 * come in cycles longer than a quarter map (each customer once per day, say) repeat only later.
 * Except where an earlier task of the same run, in the same JVM, had a full batch that passed
 * rows through ([[LearnedReductions]]): then the first batch may decide early too. In a
 * generated stage, a task takes the state an earlier task of the run left in the JVM
 * ([[IdleTaskStates]]): its projections are made once per slot, and its relearning waits as
 * long as it had come to wait.
 *
 * Its output is exactly what Spark's partial aggregate emits (grouping keys and aggregation
 * buffers), possibly with several rows per key, which the final aggregate merges.
 *
 * With `sketchKeys`, it also adds the hash of every key it emits to a sketch ([[DistinctHashes]])
 * from which the driver estimates how many distinct keys all tasks emitted: how much a merge of
 * its rows after the shuffle would reduce them ([[DropUnneededMergeAfterShuffle]]).
 */
case class FlushingPartialAggregateExec(
    groupingExpressions: Seq[NamedExpression],
    aggregateExpressions: Seq[AggregateExpression],
    aggregateAttributes: Seq[Attribute],
    resultExpressions: Seq[NamedExpression],
    capacity: Int,
    minReduction: Double,
    shuffleKeys: Seq[Expression],
    sketchKeys: Boolean,
    child: SparkPlan) extends UnaryExecNode with BottomPartialAggregateExec with CodegenSupport {

  import FlushingPartialAggregateExec.{keyHash, oneRowPartialExpressions}

  require(aggregateExpressions.forall(_.mode == Partial), "only partial aggregation flushes")

  override def output: Seq[Attribute] = resultExpressions.map(_.toAttribute)

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numInputRows" -> SQLMetrics.createMetric(sparkContext, "rows read"),
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "partial rows emitted"),
    "numFlushes" -> SQLMetrics.createMetric(sparkContext, "flushes of the key map"),
    "numPassedThrough" -> SQLMetrics.createMetric(
      sparkContext,
      "rows passed through (reduction too low)"),
    "numLearnedRows" -> SQLMetrics.createMetric(sparkContext, "rows merged while learning"),
    "numKeptKeysDropped" -> SQLMetrics.createMetric(
      sparkContext,
      "kept keys dropped (merged too few rows)"),
    "numProbedOnTrial" -> SQLMetrics.createMetric(
      sparkContext,
      "rows probed while kept keys were on trial"))

  /** The sketch of the keys emitted, with `sketchKeys` (registered when first read: driver). */
  @transient lazy val emittedKeys: Option[DistinctHashes] = if (!sketchKeys) None
  else {
    val sketch = new DistinctHashes
    sparkContext.register(sketch, "distinct keys emitted")
    Some(sketch)
  }

  /** The shuffle keys bound to the grouping key's row; None when they are the whole key. */
  private def boundShuffleKeys: Option[Seq[Expression]] = {
    val keyAttributes = groupingExpressions.map(_.toAttribute)
    val keySet = AttributeSet(keyAttributes)
    val coversKey = keyAttributes.forall(a => shuffleKeys.exists(_.semanticEquals(a)))
    if (shuffleKeys.isEmpty || coversKey || !shuffleKeys.forall(_.references.subsetOf(keySet))) None
    else Some(shuffleKeys.map(BindReferences.bindReference(_, keyAttributes)))
  }

  override def simpleString(maxFields: Int): String =
    s"FlushingPartialAggregate(keys=${groupingExpressions.map(_.name).mkString("[", ", ", "]")}, " +
      s"functions=${aggregateExpressions.map(_.toString).mkString("[", ", ", "]")}, " +
      s"capacity=$capacity" +
      boundShuffleKeys.fold("")(_ =>
        shuffleKeys.map(_.sql).mkString(", heavy by [", ", ", "]")) + ")"

  private def flushingMetrics: FlushingMetrics = FlushingMetrics(
    longMetric("numInputRows"),
    longMetric("numOutputRows"),
    longMetric("numFlushes"),
    longMetric("numPassedThrough"),
    longMetric("numLearnedRows"),
    longMetric("numKeptKeysDropped"),
    longMetric("numProbedOnTrial"))

  /**
   * A task's state, over `input` when pulled (without code generation). `sketch` (null without
   * `sketchKeys`) and `metrics` are the task's copies of the driver's.
   */
  private[localagg] def newState(
      partIndex: Int,
      input: Iterator[InternalRow],
      run: Long,
      sketch: DistinctHashes,
      metrics: FlushingMetrics): FlushingAggregationIterator = {
    val keyHashOf = keyHash(
      groupingExpressions.map(_.dataType),
      groupingExpressions.map(_.toAttribute),
      output)
    new FlushingAggregationIterator(
      partIndex,
      groupingExpressions,
      child.output,
      input,
      aggregateExpressions,
      aggregateAttributes,
      resultExpressions,
      MutableProjection.create(_, _),
      capacity,
      minReduction,
      boundShuffleKeys.map(UnsafeProjection.create),
      run,
      Option(sketch).map(_ -> keyHashOf),
      metrics)
  }

  /** Whether a task state may serve several tasks: no expression has a partition's seed. */
  private def statesReusable: Boolean =
    (groupingExpressions ++ aggregateExpressions ++ resultExpressions).forall(_.deterministic)

  /**
   * The state of a generated stage's task: one its run left in this JVM ([[IdleTaskStates]]),
   * restarted, or a new one; given back when the task completes with it drained.
   */
  private[localagg] def taskState(
      partIndex: Int,
      run: Long,
      sketch: DistinctHashes,
      metrics: FlushingMetrics): FlushingAggregationIterator = {
    val task = TaskContext.get()
    if (task == null || !statesReusable) {
      return newState(partIndex, Iterator.empty, run, sketch, metrics)
    }
    val state = Option(IdleTaskStates.take(run)) match {
      case Some(idle) => idle.restart(sketch, metrics); idle
      case None => newState(partIndex, Iterator.empty, run, sketch, metrics)
    }
    task.addTaskCompletionListener[Unit](_ => if (state.drained) IdleTaskStates.give(run, state))
    state
  }

  override protected def doExecute(): RDD[InternalRow] = {
    val run = LearnedReductions.nextRun()
    val sketch = emittedKeys.orNull
    val metrics = flushingMetrics
    child.execute().mapPartitionsWithIndexInternal { (partIndex, rows) =>
      if (!rows.hasNext) Iterator.empty else newState(partIndex, rows, run, sketch, metrics)
    }
  }

  // Code generation: rows that pass through are computed in the stage's loop (their one-row
  // partials inline), the others are offered to the task's state, whose flushes are emitted.

  /** A row's one-row partial over the input, when every function is declarative. */
  private def oneRowPartial: Option[Seq[Expression]] = oneRowPartialExpressions(
    groupingExpressions,
    aggregateExpressions,
    aggregateExpressions.map(_.aggregateFunction))

  override def supportCodegen: Boolean = oneRowPartial.isDefined

  override def inputRDDs(): Seq[RDD[InternalRow]] =
    child.asInstanceOf[CodegenSupport].inputRDDs()

  /**
   * An input row can make several output rows (a flush's), all copies but its own one-row
   * partial: no copy more where they reach the stage's output buffer as emitted.
   */
  override def needCopyResult: Boolean = parent match {
    case _: WholeStageCodegenExec => false
    case marker: SkewAggLocalStageExec => !marker.emitsRowsAsGiven
    case _ => true
  }

  private var stateTerm: String = _

  override protected def doProduce(ctx: CodegenContext): String = {
    val plan = ctx.addReferenceObj("flushingPlan", this)
    val run = ctx.addReferenceObj("run", java.lang.Long.valueOf(LearnedReductions.nextRun()))
    val sketch = emittedKeys.fold("null")(ctx.addReferenceObj("sketch", _))
    val metrics = ctx.addReferenceObj("flushingMetrics", flushingMetrics)
    stateTerm = ctx.addMutableState(
      classOf[FlushingAggregationIterator].getName,
      "flushing",
      v =>
        s"$v = $plan.taskState(partitionIndex, $run.longValue(), $sketch, $metrics);",
      forceInline = true)
    val out = ctx.freshName("out")
    s"""
       |${child.asInstanceOf[CodegenSupport].produce(ctx, this)}
       |$stateTerm.finish();
       |UnsafeRow $out;
       |while (($out = $stateTerm.nextOutput()) != null) {
       |  $stateTerm.emitted($out);
       |  ${consume(ctx, null, out)}
       |  if (shouldStop()) return;
       |}
     """.stripMargin
  }

  override def doConsume(ctx: CodegenContext, input: Seq[ExprCode], row: ExprCode): String = {
    val rowsIn = metricTerm(ctx, "numInputRows")
    val pass = ctx.freshName("pass")
    val out = ctx.freshName("out")
    // Every column is evaluated first: both branches read them. The input row the state is
    // offered is made here from the columns (Spark's row variable would evaluate them again).
    val evaluated = evaluateVariables(input)
    ctx.currentVars = input
    ctx.INPUT_ROW = null
    val inputRow = GenerateUnsafeProjection.createCode(
      ctx,
      child.output.zipWithIndex.map { case (a, i) => BoundReference(i, a.dataType, a.nullable) })
    // The one-row partial, from the input's columns.
    ctx.currentVars = input
    ctx.INPUT_ROW = null
    val partial = oneRowPartial.get.map(BindReferences.bindReference(_, child.output))
    val partialRow = GenerateUnsafeProjection.createCode(ctx, partial)
    s"""
       |$rowsIn.add(1);
       |$evaluated
       |boolean $pass = $stateTerm.passing();
       |if (!$pass) {
       |  ${inputRow.code}
       |  $pass = !$stateTerm.offer(${inputRow.value});
       |}
       |UnsafeRow $out = null;
       |if ($pass) {
       |  $stateTerm.passed();
       |  ${partialRow.code}
       |  $out = ${partialRow.value};
       |}
       |while (true) {
       |  if ($out == null) {
       |    $out = $stateTerm.nextOutput();
       |    if ($out == null) break;
       |    ${if (needCopyResult) "" else s"$out = $out.copy();"}
       |  }
       |  $stateTerm.emitted($out);
       |  ${consume(ctx, null, out)}
       |  $out = null;
       |}
     """.stripMargin
  }

  override protected def withNewChildInternal(newChild: SparkPlan): FlushingPartialAggregateExec =
    copy(child = newChild)
}

object FlushingPartialAggregateExec {
  // The policy's constants, named once (the class comment says how they are used; the
  // measurements they were chosen on are in docs/experiments.md, "The flushing local aggregate").

  /** Shuffle keys are counted in 2^12 = 4096 hash buckets. */
  private[skewagg] val ShuffleBucketBits = 12

  /** A key (or shuffle-key bucket) is heavy with at least this many times the mean rows. */
  private[localagg] val HeavyFactor = 8.0

  /**
   * Kept keys stay while the rows probed after (`capacity` of them, or a quarter after a run's
   * drop) merge into them at least this fraction of the share of rows they held in the batch that
   * kept them.
   */
  private[localagg] val KeptKeysMinHitShare = 0.5

  /** Rows passed through before the first relearning, in map capacities. */
  private[localagg] val FirstRelearnCapacities = 16L

  /** Each relearning that passes rows through again waits this many times longer... */
  private[localagg] val RelearnGrowth = 2L

  /** ...up to this many map capacities of rows. */
  private[localagg] val MaxRelearnCapacities = 256L

  /** A relearning batch may decide at this fraction of the map (and a trial after a drop)... */
  private[localagg] val EarlyDecisionFraction = 4

  /** ...when that is at least this many keys. */
  private[localagg] val EarlyDecisionMinKeys = 1024

  /**
   * Early, the other keys must merge fewer than `1 + (minReduction - 1) / EarlyReductionDivisor`
   * rows per key for the batch to pass rows through.
   */
  private[localagg] val EarlyReductionDivisor = 10

  /**
   * The 64-bit hash of an output row's grouping key (its first columns), for the sketch of the
   * keys emitted: of the value itself for one integral key (no projection per row), else
   * Spark's XxHash64 of the key columns. A null key hashes to the seed, as in XxHash64.
   */
  private[localagg] def keyHash(
      keyTypes: Seq[DataType],
      keyAttributes: Seq[Attribute],
      output: Seq[Attribute]): InternalRow => Long = keyTypes match {
    case Seq(LongType | TimestampType | TimestampNTZType) =>
      row => if (row.isNullAt(0)) KeyHashSeed else XXH64.hashLong(row.getLong(0), KeyHashSeed)
    case Seq(IntegerType | DateType) =>
      row => if (row.isNullAt(0)) KeyHashSeed else XXH64.hashInt(row.getInt(0), KeyHashSeed)
    case _ =>
      val projection = UnsafeProjection.create(Seq(new XxHash64(keyAttributes)), output)
      row => projection(row).getLong(0)
  }

  /**
   * When every function is declarative: a row's one-row partial as expressions over the input
   * (the grouping expressions, then each buffer's update expressions over its initial values,
   * under the function's FILTER), for rows passed through. `functions` are the aggregate
   * expressions' functions as the caller holds them.
   */
  private[localagg] def oneRowPartialExpressions(
      grouping: Seq[NamedExpression],
      aggregates: Seq[AggregateExpression],
      functions: Seq[AggregateFunction]): Option[Seq[Expression]] = {
    val declarative = aggregates.zip(functions).collect {
      case (ae, d: DeclarativeAggregate) => (ae, d)
    }
    if (declarative.size != aggregates.size) None
    else {
      Some(grouping ++ declarative.flatMap { case (ae, d) =>
        val initial = AttributeMap(d.aggBufferAttributes.zip(d.initialValues))
        d.updateExpressions.zip(d.initialValues).map { case (update, init) =>
          val once =
            update.transform { case a: AttributeReference if initial.contains(a) => initial(a) }
          ae.filter.map(f => If(f, once, init)).getOrElse(once)
        }
      })
    }
  }

  /** XxHash64's default seed. */
  private val KeyHashSeed = 42L

  /**
   * The flushing form of Spark's partial aggregate `partial` (as AggUtils planned it), sized by
   * the session's `spark.skewagg.localAggregate.*`, below an exchange on `shuffleKeys`; with
   * `sketchKeys`, sketching the keys it emits.
   */
  def from(
      partial: BaseAggregateExec,
      shuffleKeys: Seq[Expression],
      sketchKeys: Boolean = false): FlushingPartialAggregateExec =
    FlushingPartialAggregateExec(
      partial.groupingExpressions,
      partial.aggregateExpressions,
      partial.aggregateAttributes,
      partial.resultExpressions,
      SQLConf.get.getConf(SkewAggConf.LOCAL_AGGREGATE_CAPACITY),
      SQLConf.get.getConf(SkewAggConf.LOCAL_AGGREGATE_MIN_REDUCTION),
      shuffleKeys,
      sketchKeys,
      partial.child)
}
