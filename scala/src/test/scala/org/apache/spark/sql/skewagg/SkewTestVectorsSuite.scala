package org.apache.spark.sql.skewagg

import java.nio.file.Files

import com.fasterxml.jackson.databind.JsonNode
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.skewagg.skewsplit.GroupsBeyondShuffleKeys

/**
 * The skew test's shared cases (`tests/data/skew_test_vectors.json`): partition sizes, task slots
 * and settings, and the partitions [[SkewedPartitions]] finds skewed (by the per-slot share),
 * its median, threshold and the pieces an aggregate's split reads
 * ([[SkewedPartitions.pieceSize]]). The Python advisor, which reads event logs without a JVM,
 * evaluates the same file with its own code (`tests/test_skew_vectors.py`), so the two tests
 * cannot drift apart. Its `rowsCases` are shuffles measured below an aggregate that groups by
 * more than their keys ([[GroupsBeyondShuffleKeys.measure]]: bytes per partition, the shuffle's
 * records and data size), with the piece size the split rules cut them in.
 */
class SkewTestVectorsSuite extends AnyFunSuite {
  import SkewTestVectors.{confOf, ints, list, longs, path}

  private def cases: Seq[JsonNode] = list("cases")

  private def rowsCases: Seq[JsonNode] = list("rowsCases")

  test("the shared cases are there") {
    assert(Files.exists(path), s"$path is missing")
    assert(cases.size >= 8)
    assert(cases.exists(_.get("skewed").size() > 0))
    assert(cases.exists(_.get("skewed").size() == 0))
    assert(rowsCases.size >= 4)
    assert(rowsCases.exists(_.get("skewed").size() > 0))
    assert(rowsCases.exists(_.get("skewed").size() == 0))
  }

  test("SkewedPartitions finds what every shared case expects") {
    cases.foreach { c =>
      val name = c.get("name").asText()
      val conf = confOf(c)
      val sizes = longs(c, "sizes")
      val found = SkewedPartitions.find(sizes, conf, c.get("slots").asInt)
      val expected = ints(c, "skewed")
      assert(found.skewed.map(_._1) == expected, name)
      assert(found.medianSize == c.get("median").asLong, name)
      assert(found.threshold == c.get("threshold").asLong, name)
      val minSplit = conf.getConf(SkewAggConf.SKEW_MIN_SPLIT_SIZE)
      assert(SkewedPartitions.pieceSize(sizes, found, minSplit) == c.get("pieceSize").asLong, name)
    }
  }

  test("GroupsBeyondShuffleKeys.measure finds what every shared rows case expects") {
    rowsCases.foreach { c =>
      val name = c.get("name").asText()
      val conf = confOf(c)
      // The case's task slots, as the rules' TaskSlots reads them.
      conf.setConf(SkewAggConf.SKEW_TASK_SLOTS, c.get("slots").asInt)
      val bytes = longs(c, "bytes")
      val m = GroupsBeyondShuffleKeys.measure(
        bytes,
        c.get("records").asLong,
        c.get("dataSize").asLong,
        conf)
      val expected = ints(c, "skewed")
      assert(m.skew.skewed.map(_._1) == expected, name)
      assert(m.skew.medianSize == c.get("median").asLong, name)
      assert(m.skew.threshold == c.get("threshold").asLong, name)
      assert(m.skew.inRows == (c.get("records").asLong > 0), name)
      assert(
        SkewedPartitions.pieceSize(m.bytes, m.skew, m.byteMinSplit) == c.get("pieceSize").asLong,
        name)
    }
  }
}
