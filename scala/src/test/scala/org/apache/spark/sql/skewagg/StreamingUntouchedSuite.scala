package org.apache.spark.sql.skewagg

import org.apache.spark.sql.execution.exchange.{REPARTITION_BY_COL, ShuffleExchangeExec}
import org.apache.spark.sql.functions._
import org.apache.spark.sql.streaming.OutputMode

/** Streaming aggregations are planned by Spark alone: skewagg's rules are for bounded input. */
class StreamingUntouchedSuite extends SkewAggSuiteBase {

  test("a streaming repartition + aggregate keeps Spark's plan") {
    val session = spark
    import session.implicits._
    val query = StreamingTestSources.longs(session, (0L until 200L) ++ Seq.fill(200)(0L))
      .select(($"value" % 10).as("k"), $"value".as("v"))
      .repartition($"k").groupBy("k").agg(sum("v"))
      .writeStream.format("memory").queryName("streaming_untouched")
      .outputMode(OutputMode.Complete()).start()
    try {
      query.processAllAvailable()
      val executed = StreamingTestSources.lastPlan(query)
      val userExchanges = collect(executed) {
        case e: ShuffleExchangeExec if e.shuffleOrigin == REPARTITION_BY_COL => e
      }
      assert(userExchanges.nonEmpty, executed)
      // The user's exchange still moves raw rows: no partial aggregate was put below it.
      assert(userExchanges.forall(e => !PartialAggregates.isPartial(e.child)), executed)
      assert(spark.table("streaming_untouched").count() == 10)
    } finally {
      query.stop()
    }
  }
}
