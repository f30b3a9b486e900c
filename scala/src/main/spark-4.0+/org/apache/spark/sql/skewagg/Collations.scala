package org.apache.spark.sql.skewagg

import org.apache.spark.sql.catalyst.util.UnsafeRowUtils
import org.apache.spark.sql.types.DataType

/** Whether values of a type that are equal are equal as bytes. */
object Collations {

  /** Not for strings of a collation that compares other than by bytes (Spark 4.0+). */
  def binaryStable(dataType: DataType): Boolean = UnsafeRowUtils.isBinaryStable(dataType)
}
