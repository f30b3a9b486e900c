package org.apache.spark.sql.skewagg.localagg

import java.util.ArrayDeque
import java.util.concurrent.atomic.AtomicLong

/**
 * The task states of [[FlushingPartialAggregateExec]] runs whose tasks finished with them in this
 * JVM (an executor, or the driver in local mode), kept for the same run's next tasks.
 *
 * A state holds its aggregate's projections, generated code made with the state (what making
 * one per task cost is in docs/experiments.md, "Task states made once per slot"). So a generated
 * stage takes a state its run left here, restarted for the task, and gives it back when the task
 * completes with the state drained: a run makes about one state per task slot, not one per task.
 * Only states without nondeterministic expressions are kept (their projections carry no
 * partition's seed).
 *
 * At most `MaxRuns` runs are kept, the oldest dropped first, and a run keeps only as many states
 * as its tasks ran at once here.
 */
private[localagg] object IdleTaskStates {

  private val MaxRuns = 16

  private val idle =
    new java.util.LinkedHashMap[Long, ArrayDeque[FlushingAggregationIterator]](16, 0.75f, true) {
      override def removeEldestEntry(
          eldest: java.util.Map.Entry[Long, ArrayDeque[FlushingAggregationIterator]]): Boolean =
        size > MaxRuns
    }

  /** States taken again, in this JVM (tests read it). */
  private[localagg] val reused = new AtomicLong

  /** A state `run`'s tasks left here, or null. */
  def take(run: Long): FlushingAggregationIterator = idle.synchronized {
    val states = idle.get(run)
    val state = if (states == null) null else states.poll()
    if (state != null) reused.incrementAndGet()
    state
  }

  /** Keeps `state`, drained, for `run`'s next task. */
  def give(run: Long, state: FlushingAggregationIterator): Unit = idle.synchronized {
    var states = idle.get(run)
    if (states == null) {
      states = new ArrayDeque[FlushingAggregationIterator](2)
      idle.put(run, states)
    }
    states.push(state)
  }
}
