package org.apache.spark.sql.catalyst.expressions.aggregate

import org.apache.spark.sql.types.DataType

/**
 * How Spark's `mode` keys its counts, Spark 4.2 and newer: by the value normalized with Spark's
 * own normalizer (-0.0 counted as 0.0, SPARK-57329). In Spark's package: the normalizer is
 * package-private.
 */
object SkewAggModeKeys {
  def normalizer(dataType: DataType): Any => Any = ModeKeyNormalizer.forType(dataType)
}
