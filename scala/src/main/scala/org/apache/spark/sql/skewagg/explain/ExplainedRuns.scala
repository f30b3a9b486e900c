package org.apache.spark.sql.skewagg.explain

import scala.util.Try

import org.apache.spark.SparkContext
import org.apache.spark.scheduler.{SparkListener, SparkListenerEvent}
import org.apache.spark.sql.catalyst.analysis.EliminateSubqueryAliases
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, View}
import org.apache.spark.sql.execution.QueryExecution
import org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd

/**
 * The explanations of the queries that ran last in this application, each kept with its session
 * and analyzed plan: how a query asked about afresh learns what skewagg decided when the same
 * query ran in the same session.
 *
 * A Spark Connect client's DataFrame keeps no executed plan (every action and every explain plans
 * it anew on the server), so `skewagg.explain(df)` there, `SELECT * FROM skewagg_explain(TABLE(q))`
 * from any client, look up the last run of the same analyzed plan in the same session (compared
 * canonicalized, its subquery aliases and views removed). Recorded from Spark's
 * end-of-execution event on the listener bus, for every SQL execution, keeping the last
 * [[Kept]]; attached once per SparkContext by the extension.
 */
object ExplainedRuns {

  /** How many executions are kept: a client asks about the query it just ran. */
  val Kept = 16

  private final case class Run(session: String, plan: LogicalPlan, explanation: String)

  @volatile private var context: Option[SparkContext] = None
  private var runs = List.empty[Run] // newest first, at most Kept

  /** Records the executions of the running SparkContext from now on (once per SparkContext). */
  def attachToActiveContext(): Unit = SparkContext.getActive.foreach(attachOnce)

  private def attachOnce(sc: SparkContext): Unit = synchronized {
    if (!context.contains(sc)) {
      context = Some(sc)
      runs = Nil
      sc.addSparkListener(new SparkListener {
        override def onOtherEvent(event: SparkListenerEvent): Unit = event match {
          case end: SparkListenerSQLExecutionEnd if end.qe != null =>
            Try(record(end.qe, SkewAggExplain.explain(end.qe.executedPlan)))
          case _ =>
        }
      })
    }
  }

  private def record(execution: QueryExecution, explanation: String): Unit = {
    val run = Run(execution.sparkSession.sessionUUID, comparable(execution.analyzed), explanation)
    synchronized {
      runs = (run :: runs.filterNot(r => r.session == run.session && r.plan == run.plan))
        .take(Kept)
    }
  }

  /**
   * The explanation recorded when the query of `execution` last ran in its session, after every
   * event posted so far was delivered.
   */
  def lastRunOf(execution: QueryExecution): Option[String] = {
    // A bus that does not drain within Spark's wait (10 s): answer from what was delivered.
    context.foreach(sc => Try(sc.listenerBus.waitUntilEmpty()))
    val session = execution.sparkSession.sessionUUID
    val plan = comparable(execution.analyzed)
    synchronized { runs.find(r => r.session == session && r.plan == plan).map(_.explanation) }
  }

  /** `plan` without the names a client wraps it in (a temporary view, a subquery alias). */
  private def comparable(plan: LogicalPlan): LogicalPlan = {
    def strip(p: LogicalPlan): LogicalPlan = p match {
      case v: View => strip(v.child)
      case other => other
    }
    strip(EliminateSubqueryAliases(strip(plan))).canonicalized
  }
}
