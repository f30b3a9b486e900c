package org.apache.spark.sql.skewagg

import java.util.concurrent.atomic.AtomicLong

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.trees.TreeNode
import org.apache.spark.sql.execution.{ColumnarRule, SparkPlan, SparkStrategy}
import org.apache.spark.sql.execution.adaptive.AQEShuffleReadRule
import org.apache.spark.sql.execution.exchange.ShuffleOrigin
import org.apache.spark.sql.internal.SQLConf

/**
 * The planning-time safety net: every skewagg rule, check and strategy is registered wrapped in
 * one of these guards ([[io.skewagg.SkewAggExtensions]]). When the wrapped step throws a
 * non-fatal exception, the guard returns what Spark would have had without it (the rule's input
 * plan; no plan from the strategy, so Spark's own strategies plan the node), logs one warning
 * naming the step and the exception, and records the fallback on the plan it was given
 * ([[SkewAggDecision.FellBack]]), which `skewagg.explain` prints. Errors at run time, inside
 * skewagg's operators, are not caught: they are bugs to fix, not to hide.
 *
 * Deliberate analysis errors of skewagg's own checks ([[SkewAggAnalysisException]]: a hint naming
 * a missing column) pass through. `spark.skewagg.test.failRule=<step name>` makes a step throw
 * where it runs, to test this path.
 */
object PlanningFallback extends Logging {
  private val fallbacks = new AtomicLong()
  @volatile private var lastText = ""

  /** How many fallbacks happened in this JVM (tests and the fuzz runner read it). */
  def count: Long = fallbacks.get()

  /** The text of the last fallback in this JVM. */
  def last: String = lastText

  /** `step(input)`, or `fallback` with the failure recorded on `input`. */
  private def guarded[O](name: String, input: TreeNode[_], fallback: => O)(step: => O): O = {
    try {
      if (SQLConf.get.getConf(SkewAggConf.TEST_FAIL_RULE) == name) {
        throw new IllegalStateException(s"test fault injected into $name")
      }
      step
    } catch {
      case e: SkewAggAnalysisException => throw e
      case NonFatal(e) =>
        fallbacks.incrementAndGet()
        val fellBack = SkewAggDecision.FellBack(name, e.toString)
        lastText = fellBack.text
        if (!RecordedDecisions.fellBack(input).contains(fellBack)) {
          logWarning(s"skewagg: ${fellBack.text}")
          RecordedDecisions.note(input, fellBack)
        }
        fallback
    }
  }

  private def nameOf(step: AnyRef): String = step.getClass.getSimpleName.stripSuffix("$")

  /** A guard, and the step it wraps (how tests list the steps registered in a session). */
  trait Guarded {
    def wrapped: AnyRef
  }

  /** A logical (analysis) rule that returns its input when it fails. */
  def logical(rule: Rule[LogicalPlan]): Rule[LogicalPlan] = new Rule[LogicalPlan] with Guarded {
    override val wrapped: AnyRef = rule
    override val ruleName: String = nameOf(rule)
    override def apply(plan: LogicalPlan): LogicalPlan =
      guarded(ruleName, plan, plan)(rule(plan))
  }

  /** An analysis check that passes when it fails (other than by a skewagg analysis error). */
  def check(rule: LogicalPlan => Unit): LogicalPlan => Unit =
    new (LogicalPlan => Unit) with Guarded {
      override val wrapped: AnyRef = rule
      private val name = nameOf(rule)
      override def apply(plan: LogicalPlan): Unit = guarded(name, plan, ())(rule(plan))
    }

  /** A strategy that plans nothing when it fails, so Spark's own strategies plan the node. */
  def strategy(strategy: SparkStrategy): SparkStrategy = new SparkStrategy with Guarded {
    override val wrapped: AnyRef = strategy
    private val name = nameOf(strategy)
    override def apply(plan: LogicalPlan): Seq[SparkPlan] =
      guarded(name, plan, Seq.empty[SparkPlan])(strategy(plan))
  }

  /**
   * A physical rule that returns its input when it fails; a [[SkewAggShuffleReadRule]] stays an
   * AQEShuffleReadRule, so adaptive execution keeps checking its result against the plan's
   * distribution.
   */
  def physical(rule: Rule[SparkPlan]): Rule[SparkPlan] = rule match {
    case read: SkewAggShuffleReadRule => new AQEShuffleReadRule with Guarded {
        override val wrapped: AnyRef = read
        override val ruleName: String = nameOf(read)
        override protected def supportedShuffleOrigins: Seq[ShuffleOrigin] =
          read.supportedShuffleOrigins
        override def apply(plan: SparkPlan): SparkPlan = guarded(ruleName, plan, plan)(read(plan))
      }
    case _ => new Rule[SparkPlan] with Guarded {
        override val wrapped: AnyRef = rule
        override val ruleName: String = nameOf(rule)
        override def apply(plan: SparkPlan): SparkPlan = guarded(ruleName, plan, plan)(rule(plan))
      }
  }

  /**
   * `rule` run before columnar transitions, returning its input when it fails: without adaptive
   * execution the one physical hook after the exchanges are placed (on the whole plan); with it,
   * on each new query stage and the final plan. Its step name is the rule's, as where adaptive
   * execution runs it.
   */
  def beforeColumnarTransitions(rule: Rule[SparkPlan]): ColumnarRule =
    new ColumnarRule with Guarded {
      override val wrapped: AnyRef = rule
      private val name = nameOf(rule)
      override def preColumnarTransitions: Rule[SparkPlan] = new Rule[SparkPlan] {
        override def apply(plan: SparkPlan): SparkPlan = guarded(name, plan, plan)(rule(plan))
      }
    }
}

/**
 * A shuffle-read rule of skewagg's whose supported shuffle origins are public, so that
 * [[PlanningFallback]]'s guard of it can say the same and stay an [[AQEShuffleReadRule]]
 * (adaptive execution keeps checking such a rule's result against the plan's distribution).
 */
trait SkewAggShuffleReadRule extends AQEShuffleReadRule {
  def supportedShuffleOrigins: Seq[ShuffleOrigin]
}
