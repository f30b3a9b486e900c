package org.apache.spark.sql.skewagg.window

import scala.concurrent.Future

import org.apache.spark.MapOutputStatistics
import org.apache.spark.sql.execution.exchange.ShuffleExchangeLike

/** The map stage of a shuffle exchange, run once, by the first to ask. */
object ShuffleJobs {

  /** Spark 3.5: a lazy value. */
  def submit(exchange: ShuffleExchangeLike): Future[MapOutputStatistics] =
    exchange.submitShuffleJob
}
