package org.apache.spark.sql.skewagg.singlekey

import org.apache.spark.sql.catalyst.expressions.aggregate.Mode

/** The order `mode() WITHIN GROUP (ORDER BY ...)` breaks ties by. */
object ModeOrders {

  /** Spark 3.5 has only `mode(col)`: ties are broken by no order. */
  def reverseOpt(mode: Mode): Option[Boolean] = None
}
