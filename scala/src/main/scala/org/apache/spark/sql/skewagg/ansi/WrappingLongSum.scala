package org.apache.spark.sql.skewagg.ansi

import org.apache.spark.sql.catalyst.expressions.{
  Add, And, AttributeReference, Cast, Coalesce, EqualTo, EvalMode, Expression, If, IsNull, LessThan,
  Literal
}
import org.apache.spark.sql.catalyst.expressions.{BitwiseAnd, BitwiseXor}
import org.apache.spark.sql.catalyst.expressions.aggregate.{
  AggregateExpression, DeclarativeAggregate, Sum
}
import org.apache.spark.sql.catalyst.trees.UnaryLike
import org.apache.spark.sql.types.{DataType, IntegralType, LongType}

/**
 * `sum` of integral values in ANSI mode whose overflow fails where the result is evaluated, not
 * where rows are added. Its buffer is the sum wrapped to 64 bits and how many times it wrapped
 * (signed: +1 past the largest BIGINT, -1 past the smallest); the result is the sum when it did
 * not wrap in all, else Spark's own overflow error, that of the ANSI addition `sum` fails in.
 *
 * Where rows are summed in an order other than Spark's: a partial aggregate that runs before a
 * join drops rows (Spark's `sum` fails as soon as a running sum overflows, and aggregating a group
 * that the join then drops would fail a query Spark answers; docs/rewrites.md, "Rows a join
 * drops"), and the pieces of a window's hot key summed apart. Where the exact sum fits in a
 * BIGINT it is the result, also when a running sum in Spark's order of rows would have overflowed.
 */
case class WrappingLongSum(child: Expression) extends DeclarativeAggregate
    with UnaryLike[Expression] {
  override def dataType: DataType = LongType
  override def nullable: Boolean = true
  override def prettyName: String = "sum"

  private lazy val sum = AttributeReference("sum", LongType)()
  private lazy val wraps = AttributeReference("wraps", LongType, nullable = false)()
  override lazy val aggBufferAttributes: Seq[AttributeReference] = Seq(sum, wraps)
  override lazy val initialValues: Seq[Expression] = Seq(Literal(null, LongType), Literal(0L))

  /** -1, 0 or 1: how `a + b` wrapped, given `n`, its wrapped result. */
  private def wrapOf(a: Expression, b: Expression, n: Expression): Expression = If(
    LessThan(BitwiseAnd(BitwiseXor(a, n), BitwiseXor(b, n)), Literal(0L)),
    If(LessThan(b, Literal(0L)), Literal(-1L), Literal(1L)),
    Literal(0L))

  private def wrappingAdd(a: Expression, b: Expression) = Add(a, b, EvalMode.LEGACY)

  override lazy val updateExpressions: Seq[Expression] = {
    val x = Cast(child, LongType)
    val a = Coalesce(Seq(sum, Literal(0L)))
    val n = wrappingAdd(a, x)
    Seq(If(IsNull(x), sum, n), If(IsNull(x), wraps, wrappingAdd(wraps, wrapOf(a, x, n))))
  }

  override lazy val mergeExpressions: Seq[Expression] = {
    val (l, r) = (Coalesce(Seq(sum.left, Literal(0L))), Coalesce(Seq(sum.right, Literal(0L))))
    val n = wrappingAdd(l, r)
    Seq(
      If(And(IsNull(sum.left), IsNull(sum.right)), Literal(null, LongType), n),
      wrappingAdd(wrappingAdd(wraps.left, wraps.right), wrapOf(l, r, n)))
  }

  override lazy val evaluateExpression: Expression =
    If(EqualTo(wraps, Literal(0L)), sum, Add(Literal(Long.MaxValue), Literal(1L), EvalMode.ANSI))

  override protected def withNewChildInternal(newChild: Expression): WrappingLongSum =
    copy(child = newChild)
}

object WrappingLongSum {

  /** `a` with a [[WrappingLongSum]] for Spark's `sum` of integral values in ANSI mode. */
  def in(a: AggregateExpression): AggregateExpression = a.aggregateFunction match {
    case s: Sum
        if s.child.dataType.isInstanceOf[IntegralType] &&
          EvalModes.of(s) == EvalMode.ANSI =>
      a.copy(aggregateFunction = WrappingLongSum(s.child))
    case _ => a
  }
}
