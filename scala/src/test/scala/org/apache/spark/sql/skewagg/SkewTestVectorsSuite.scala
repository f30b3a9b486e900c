package org.apache.spark.sql.skewagg

import java.nio.file.Files

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.sql.internal.SQLConf

/**
 * The skew test's shared cases (`tests/data/skew_test_vectors.json`): partition sizes, task slots
 * and settings, and the partitions [[SkewedPartitions]] finds skewed, its median, threshold and
 * split size. The Python advisor, which reads event logs without a JVM, evaluates the same file
 * with its own code (`tests/test_skew_vectors.py`), so the two tests cannot drift apart.
 */
class SkewTestVectorsSuite extends AnyFunSuite {
  private val path =
    GenerateConfigDocs.projectRoot.resolve("tests/data/skew_test_vectors.json")

  private def cases: Seq[JsonNode] =
    new ObjectMapper().readTree(Files.readAllBytes(path)).get("cases").elements().asScala.toSeq

  test("the shared cases are there") {
    assert(Files.exists(path), s"$path is missing")
    assert(cases.size >= 8)
    assert(cases.exists(_.get("skewed").size() > 0))
    assert(cases.exists(_.get("skewed").size() == 0))
  }

  test("SkewedPartitions finds what every shared case expects") {
    cases.foreach { c =>
      val name = c.get("name").asText()
      val conf = new SQLConf
      c.get("conf").fields().asScala.foreach(e => conf.setConfString(e.getKey, e.getValue.asText))
      val sizes = c.get("sizes").elements().asScala.map(_.asLong).toArray
      val found = SkewedPartitions.find(sizes, conf, c.get("slots").asInt)
      val expected = c.get("skewed").elements().asScala.map(_.asInt).toSeq
      assert(found.skewed.map(_._1) == expected, name)
      assert(found.medianSize == c.get("median").asLong, name)
      assert(found.threshold == c.get("threshold").asLong, name)
      assert(SkewedPartitions.splitSize(sizes, found, conf) == c.get("splitSize").asLong, name)
    }
  }
}
