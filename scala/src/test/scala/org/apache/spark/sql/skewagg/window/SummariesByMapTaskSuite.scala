package org.apache.spark.sql.skewagg.window

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Alias, AttributeReference, SpecifiedWindowFrame, UnboundedFollowing, UnboundedPreceding,
  WindowExpression, WindowSpecDefinition
}
import org.apache.spark.sql.catalyst.expressions.aggregate.{Count, Sum}
import org.apache.spark.sql.catalyst.expressions.RowFrame
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.LongType
import org.scalatest.funsuite.AnyFunSuite

/** [[SummariesByMapTask]]: one summary per map task, however often a task ran. */
class SummariesByMapTaskSuite extends AnyFunSuite {

  private val k = AttributeReference("k", LongType)()
  private val v = AttributeReference("v", LongType)()

  /** sum(v) and count(v) OVER (PARTITION BY k), split. */
  private val functions = {
    val whole = SpecifiedWindowFrame(RowFrame, UnboundedPreceding, UnboundedFollowing)
    val window = Seq(Sum(v), Count(Seq(v))).map { f =>
      Alias(
        WindowExpression(f.toAggregateExpression(), WindowSpecDefinition(Seq(k), Nil, whole)),
        f.prettyName)()
    }
    val split = WindowSplitSupport.functions(window, Nil, chained = false, new SQLConf).toOption.get
    new SplitWindowFunctions(split, window, Nil, Nil, Seq(k, v), maxRangeEdgeRows = 10)
  }

  private def summary(values: Long*) =
    functions.summarize(values.iterator.map(x => InternalRow(0L, x)))

  test("a map task run again replaces its summaries; splits no task reached are empty") {
    val routed = new SummariesByMapTask
    routed.add(0 -> Map(0 -> summary(1, 2), 1 -> summary(10)))
    routed.add(1 -> Map(0 -> summary(100)))
    routed.add(0 -> Map(0 -> summary(1, 2), 1 -> summary(10))) // (task 0 retried)
    val fromExecutor = new SummariesByMapTask
    fromExecutor.add(1 -> Map(0 -> summary(100))) // (task 1 speculated)
    routed.merge(fromExecutor)
    val Seq(first, second, third) = routed.summaries(3, functions)
    assert(first.rows == 3 && first.partial.getLong(0) == 103L)
    assert(second.rows == 1 && second.partial.getLong(0) == 10L)
    assert(third.rows == 0)
    val (_, values) = functions.seeds(Seq(first, second, third))
    assert(values.getLong(0) == 113L && values.getLong(1) == 4L)
  }
}
