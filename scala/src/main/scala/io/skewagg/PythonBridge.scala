package io.skewagg

import org.apache.spark.SparkContext
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.execution.exchange.ShuffleExchangeLike
import org.apache.spark.sql.execution.joins.ShuffledJoin
import org.apache.spark.sql.skewagg.{
  BottomPartialAggregateExec, PartialAggregates, PlanNodes, SkewAggAggregateExec, SkewAggConf,
  SkewAggLocalStageExec, SkewAggWindowExec
}
import org.apache.spark.sql.skewagg.explain.SkewAggExplain
import org.apache.spark.sql.skewagg.monitor.TaskTimeRecorder

/**
 * Every JVM entry point the Python package calls through py4j (`skewagg._bridge`): Python names
 * this object and the classes it returns, no other class, so the packages behind it can move.
 */
object PythonBridge {

  /** `skewagg.explain`: one paragraph per aggregate of an executed plan. */
  def explain(plan: SparkPlan): String = SkewAggExplain.explain(plan)

  /**
   * Every operator of an executed plan (through adaptive plans, query stages and reused
   * exchanges), top down, as a JSON list: what tests assert on instead of the plan's text. Each
   * is `{"name": class name, "parent": index of the operator it feeds or -1}`, with
   * `"partial"` for aggregates (a partial half), `"origin"` for shuffles (e.g.
   * `REPARTITION_BY_COL`), `"skewJoin"` for shuffled joins, `"decision"` for skewagg's own
   * operators (what they print in the plan) and `"metrics"` for its aggregates and windows
   * (name: value).
   */
  def operators(plan: SparkPlan): String = PlanNodes.withParents(plan).map { case (node, parent) =>
    val details = node match {
      case a: BaseAggregateExec => Seq("partial" -> PartialAggregates.isPartial(a).toString)
      case _: BottomPartialAggregateExec => Seq("partial" -> "true")
      case s: ShuffleExchangeLike => Seq("origin" -> quoted(s.shuffleOrigin.toString))
      case j: ShuffledJoin => Seq("skewJoin" -> j.isSkewJoin.toString)
      case _ => Nil
    }
    val decision = node match {
      case m: SkewAggLocalStageExec => Seq("decision" -> quoted(m.decision))
      case a: SkewAggAggregateExec => Seq("decision" -> quoted(a.decision), metricsOf(a))
      case w: SkewAggWindowExec => Seq("decision" -> quoted(w.decision), metricsOf(w))
      case _ => Nil
    }
    (Seq("name" -> quoted(node.getClass.getSimpleName), "parent" -> parent.toString) ++
      details ++ decision).map { case (k, v) => s""""$k":$v""" }.mkString("{", ",", "}")
  }.mkString("[", ",", "]")

  private def metricsOf(node: SparkPlan): (String, String) = "metrics" ->
    node.metrics.toSeq.sortBy(_._1).map { case (k, m) => s"${quoted(k)}:${m.value}" }
      .mkString("{", ",", "}")

  /** `text` as a JSON string. */
  private def quoted(text: String): String = "\"" + text.flatMap {
    case '"' => "\\\""
    case '\\' => "\\\\"
    case c if c < ' ' => f"\\u${c.toInt}%04x"
    case c => c.toString
  } + "\""

  /** The skewagg operators that ran in an executed plan, one line each. */
  def operatorLines(plan: SparkPlan): String = SkewAggExplain.operatorLines(plan)

  /** A skewagg setting's default, as its config entry documents it (`skewagg.analyze`). */
  def defaultOf(key: String): String = SkewAggConf.defaultOf(key)

  /** `skewagg.TaskTimeRecorder`: a listener recording task times until it is detached. */
  def attachTaskTimeRecorder(sc: SparkContext): TaskTimeRecorder = TaskTimeRecorder.attach(sc)
}
