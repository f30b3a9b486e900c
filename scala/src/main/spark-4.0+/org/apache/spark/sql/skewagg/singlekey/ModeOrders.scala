package org.apache.spark.sql.skewagg.singlekey

import org.apache.spark.sql.catalyst.expressions.aggregate.Mode

/** The order `mode() WITHIN GROUP (ORDER BY ...)` breaks ties by. */
object ModeOrders {

  /** Some(descending) for `mode() WITHIN GROUP (ORDER BY ...)` (Spark 4.0+); None for mode(col). */
  def reverseOpt(mode: Mode): Option[Boolean] = mode.reverseOpt
}
