package org.apache.spark.sql.skewagg

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.streaming.{
  MemoryStream, StreamExecution, StreamingQueryWrapper
}
import org.apache.spark.sql.streaming.StreamingQuery

/**
 * Spark's in-memory test stream and a streaming query's last plan (Spark 4.0: in
 * execution.streaming).
 */
object StreamingTestSources {

  /** A stream of longs (column `value`) holding `values`. */
  def longs(session: SparkSession, values: Seq[Long]): DataFrame = {
    import session.implicits._
    val input =
      MemoryStream[Long](implicitly[org.apache.spark.sql.Encoder[Long]], session.sqlContext)
    input.addData(values)
    input.toDF()
  }

  /** The executed plan of the last micro-batch `query` ran. */
  def lastPlan(query: StreamingQuery): SparkPlan =
    query.asInstanceOf[StreamingQueryWrapper].streamingQuery
      .asInstanceOf[StreamExecution].lastExecution.executedPlan
}
