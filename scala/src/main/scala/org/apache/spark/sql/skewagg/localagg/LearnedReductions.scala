package org.apache.spark.sql.skewagg.localagg

import java.util.concurrent.atomic.AtomicLong

/**
 * What the tasks of one run of a [[FlushingPartialAggregateExec]] learned in this JVM (an
 * executor, or the driver in local mode): whether its last full learning batch reduced too little
 * (`true`: it passed rows through) or enough (`false`). A task of the same run starts from that:
 * after a batch that passed rows through, its first batch may decide at a quarter of the map, as
 * a relearning batch does, instead of filling the whole map first. Tasks of one stage read the
 * same kind of rows, so on keys that never repeat each task learns from a quarter of the rows it
 * learned from before; a task whose rows do merge still fills its map and learns in full.
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

  private val outcomes = new java.util.LinkedHashMap[Long, java.lang.Boolean](64, 0.75f, false) {
    override def removeEldestEntry(
        eldest: java.util.Map.Entry[Long, java.lang.Boolean]): Boolean = size > MaxRuns
  }

  /** Whether `run`'s last full learning batch in this JVM passed rows through. */
  def passedThrough(run: Long): Boolean = outcomes.synchronized {
    val outcome = outcomes.get(run)
    outcome != null && outcome.booleanValue
  }

  /** Records how `run`'s full learning batch that just ended decided. */
  def learned(run: Long, passedThrough: Boolean): Unit = outcomes.synchronized {
    outcomes.put(run, passedThrough)
  }
}
