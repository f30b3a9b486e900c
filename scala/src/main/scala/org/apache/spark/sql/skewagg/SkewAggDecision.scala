package org.apache.spark.sql.skewagg

import org.apache.spark.internal.config.ConfigEntry

/**
 * What a skewagg rule decided about one aggregate, recorded where it decided
 * ([[SkewAggDecisions.record]]) and printed, never re-derived, by the explanation. Each kind says
 * what the rule saw: the numbers it rewrote on, the switch that stopped it, or why it refused.
 */
sealed trait SkewAggDecision {

  /** One line of the explanation, e.g. "left alone by ...: switched off (KEY=false)." */
  def text: String
}

object SkewAggDecision {

  /** Rewritten by `rewrite`, with the numbers it decided on. */
  final case class Rewritten(rewrite: String) extends SkewAggDecision {
    override def text: String = s"rewritten: $rewrite"
  }

  /**
   * A rewrite that would have applied here, stopped by its switch `key` being false; `notDone`
   * says what did not happen ("no local aggregation before the join").
   */
  final case class SwitchedOff(notDone: String, key: String) extends SkewAggDecision {
    override def text: String = s"$notDone: switched off ($key=false)."
  }

  object SwitchedOff {
    def apply(notDone: String, entry: ConfigEntry[Boolean]): SwitchedOff =
      SwitchedOff(notDone, entry.key)
  }

  /** Refused for `reason`, a sentence that says what would make the rule go ahead if anything. */
  final case class Refused(reason: String) extends SkewAggDecision {
    override def text: String = s"left alone: $reason"
  }

  /** Part of a rewrite not done (e.g. hot keys not split), beside the rewrite that was done. */
  final case class NotDone(part: String, reason: String) extends SkewAggDecision {
    override def text: String = s"$part: $reason"
  }
}
