package io.skewagg

import io.skewagg.functions.FunctionInfo

import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo, Literal}

/**
 * `skewagg_version()`: the skewagg build serving this session, e.g.
 * `skewagg 0.1.0 for Spark 4.0 (Scala 2.13)`. Its presence in a session's function registry is
 * how the Python package (and a user) tells that the extension is loaded in that session.
 */
object SkewAggVersionFunction {
  val name = "skewagg_version"

  val description: (FunctionIdentifier, ExpressionInfo, Seq[Expression] => Expression) = (
    FunctionIdentifier(name),
    FunctionInfo(
      getClass.getName.stripSuffix("$"),
      name,
      "_FUNC_() - Returns the skewagg build loaded in this session.",
      "", // arguments
      """
    Examples:
      > SELECT _FUNC_();
       skewagg 0.1.0 for Spark 4.0 (Scala 2.13)
  """,
      "misc_funcs"),
    (args: Seq[Expression]) => {
      if (args.nonEmpty) {
        throw new IllegalArgumentException(
          s"$name() takes no arguments, but was called with ${args.size}.")
      }
      Literal(BuildInfo.describe)
    })
}
