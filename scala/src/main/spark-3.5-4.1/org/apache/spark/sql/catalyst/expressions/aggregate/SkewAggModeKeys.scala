package org.apache.spark.sql.catalyst.expressions.aggregate

import org.apache.spark.sql.types.DataType

/**
 * How Spark's `mode` keys its counts, Spark 4.0 and 4.1: by the value as it is (-0.0 and 0.0
 * apart). In Spark's package because on 4.2+ the normalizer it uses is Spark's own.
 */
object SkewAggModeKeys {
  def normalizer(dataType: DataType): Any => Any = identity
}
