package org.apache.spark.sql.skewagg

import org.apache.spark.sql.types.DataType

/** Whether values of a type that are equal are equal as bytes. */
object Collations {

  /** Spark 3.5 has no collated strings: equal values of every type are equal as bytes. */
  def binaryStable(dataType: DataType): Boolean = true
}
