package org.apache.spark.sql.skewagg.localagg

import java.util.concurrent.atomic.AtomicLong

/**
 * What the tasks of one run of a [[FlushingPartialAggregateExec]] learned in this JVM (an
 * executor, or the driver in local mode): whether its last full learning batch reduced too little
 * (it passed rows through) or enough, and whether its last trial of kept keys dropped them. A task
 * of the same run starts from that: after a batch that passed rows through, its first batch may
 * decide at a quarter of the map, as a relearning batch does, instead of filling the whole map
 * first; after a trial that dropped its kept keys, its own trial is judged after a quarter of the
 * rows probed. Tasks of one stage read the same kind of rows, so on keys that never repeat each
 * task learns from a quarter of the rows it learned from before; a task whose rows do merge still
 * fills its map and learns in full, and kept keys that do merge are kept.
 *
 * Runs are numbered on the driver ([[LearnedReductions.nextRun]]) when the operator's RDD is made.
 * At most `MaxRuns` runs are kept per JVM, the oldest dropped first: a long-lived executor keeps a
 * few bytes per recent run, never one entry per query it ever ran.
 */
private[localagg] object LearnedReductions {

  private val MaxRuns = 256

  private val runs = new AtomicLong

  /** A new run's number (on the driver). */
  def nextRun(): Long = runs.incrementAndGet()

  /** A run's outcomes: `PassedThrough` and `DroppedKeptKeys` bits. */
  private val outcomes = new java.util.LinkedHashMap[Long, Integer](64, 0.75f, false) {
    override def removeEldestEntry(eldest: java.util.Map.Entry[Long, Integer]): Boolean =
      size > MaxRuns
  }

  private val PassedThrough = 1
  private val DroppedKeptKeys = 2

  private def has(run: Long, bit: Int): Boolean = outcomes.synchronized {
    val outcome = outcomes.get(run)
    outcome != null && (outcome.intValue & bit) != 0
  }

  private def record(run: Long, bit: Int, set: Boolean): Unit = outcomes.synchronized {
    val old = Option(outcomes.get(run)).fold(0)(_.intValue)
    outcomes.put(run, if (set) old | bit else old & ~bit)
  }

  /** Whether `run`'s last full learning batch in this JVM passed rows through. */
  def passedThrough(run: Long): Boolean = has(run, PassedThrough)

  /** Records how `run`'s full learning batch that just ended decided. */
  def learned(run: Long, passedThrough: Boolean): Unit = record(run, PassedThrough, passedThrough)

  /** Whether `run`'s last trial of kept keys in this JVM dropped them. */
  def droppedKeptKeys(run: Long): Boolean = has(run, DroppedKeptKeys)

  /** Records how `run`'s trial of kept keys that just ended was judged. */
  def judged(run: Long, dropped: Boolean): Unit = record(run, DroppedKeptKeys, dropped)
}
