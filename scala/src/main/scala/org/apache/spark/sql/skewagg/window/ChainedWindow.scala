package org.apache.spark.sql.skewagg.window

import org.apache.spark.sql.catalyst.expressions.{Expression, NamedExpression, SortOrder}
import org.apache.spark.sql.execution.{SortExec, SparkPlan}
import org.apache.spark.sql.execution.window.WindowExec

/**
 * One window of a chain of windows on the same PARTITION BY keys, as Spark planned it: its
 * functions and order, and the sort Spark placed below it (None: the window below it already
 * leaves its rows in an order this one reads). A chain is listed bottom first; its first window
 * always has its sort.
 */
final case class ChainedWindow(
    windowExpression: Seq[NamedExpression],
    orderSpec: Seq[SortOrder],
    sort: Option[Seq[SortOrder]])

object ChainedWindow {

  /** Spark's plan of `chain` over `input`: each window over its sort, if it has one. */
  def sparkPlan(chain: Seq[ChainedWindow], keys: Seq[Expression], input: SparkPlan): SparkPlan =
    chain.foldLeft(input) { (below, window) =>
      WindowExec(
        window.windowExpression,
        keys,
        window.orderSpec,
        window.sort.fold(below)(SortExec(_, global = false, below)))
    }

  /** The order each window of `chain` reads its rows in: its sort's, or the one below's. */
  def sortOrders(chain: Seq[ChainedWindow]): Seq[Seq[SortOrder]] =
    chain.tail.scanLeft(chain.head.sort.getOrElse(Nil))((below, window) =>
      window.sort.getOrElse(below))
}
