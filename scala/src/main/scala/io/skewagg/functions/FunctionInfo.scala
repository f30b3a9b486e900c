package io.skewagg.functions

import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo}

/** The `DESCRIBE FUNCTION` entry of every skewagg function. */
object FunctionInfo {
  def apply(
      className: String,
      name: String,
      usage: String,
      arguments: String,
      examples: String,
      group: String): ExpressionInfo =
    new ExpressionInfo(
      className,
      null,
      name,
      usage,
      arguments,
      examples,
      "", // note
      group,
      "0.1.0", // since
      "", // deprecated
      "built-in")

  /** A literal argument's value (what the functions take), or an error naming the function. */
  def literal(
      function: String,
      what: String,
      argument: Expression): Any = {
    if (!argument.foldable) {
      throw new IllegalArgumentException(
        s"$function takes $what as a literal, but was given ${argument.sql}.")
    }
    argument.eval()
  }
}
