package org.apache.spark.sql.skewagg.window

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, NthValue, UnsafeProjection, UnsafeRow}

/**
 * nth_value of a split key: Spark's buffer (the n-th counted input, the counted rows plus one)
 * after the rows before each split, and over the whole key (counted: every row, or with IGNORE
 * NULLS the rows whose input is not null).
 *
 * Shape: each split keeps its head ([[Head]]): per function, its counted rows and the inputs of
 * its first n counted rows, in order. The n-th counted input before a split is then in the heads
 * of the splits before it, in order ([[seeds]]).
 */
final class SplitNthValues(nths: Seq[NthValue], input: Seq[Attribute]) extends Serializable {

  private val reach = nths.map(_.offset.eval().asInstanceOf[Int])

  /** A split's head: per function, its counted rows and its first counted inputs. */
  final class Head {
    private val project = UnsafeProjection.create(nths.map(_.input), input)
    private val counted = new Array[Long](nths.size)
    private val first = nths.map(_ => mutable.ArrayBuffer.empty[UnsafeRow])

    def add(row: InternalRow): Unit = {
      val values = project(row)
      nths.indices.foreach { i =>
        if (!nths(i).ignoreNulls || !values.isNullAt(i)) {
          if (first(i).size < reach(i)) first(i) += values.copy()
          counted(i) += 1
        }
      }
    }

    def result: Seq[(Long, IndexedSeq[UnsafeRow])] =
      nths.indices.map(i => (counted(i), first(i).toIndexedSeq))
  }

  /**
   * Per split of one key (in order), per function: Spark's buffer after the splits before it
   * (the n-th counted input or null, the counted rows plus one); and per function the key's
   * value (the n-th counted input of all its rows, or null).
   */
  def seeds(heads: Seq[Seq[(Long, IndexedSeq[UnsafeRow])]]): (Seq[Seq[Seq[Any]]], Seq[Any]) = {
    def nth(i: Int, splits: Seq[Seq[(Long, IndexedSeq[UnsafeRow])]]): Any =
      splits.iterator.flatMap(_(i)._2).drop(reach(i) - 1).take(1).toList.headOption
        .map(_.get(i, nths(i).dataType)).orNull
    val seeds = heads.indices.map { split =>
      val before = heads.take(split)
      nths.indices.map(i => Seq(nth(i, before), 1L + before.map(_(i)._1).sum))
    }
    (seeds, nths.indices.map(nth(_, heads)))
  }
}
