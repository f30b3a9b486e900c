package org.apache.spark.sql.skewagg

import java.nio.file.{Files, Path}

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}

import org.apache.spark.sql.internal.SQLConf

/**
 * The shared cases of `tests/data/skew_test_vectors.json`, as the Scala suites read them
 * ([[SkewTestVectorsSuite]], the window split's cost in `WindowSplitPlanSuite`); the Python
 * tests read the same file with the advisor's code.
 */
object SkewTestVectors {
  val path: Path = GenerateConfigDocs.projectRoot.resolve("tests/data/skew_test_vectors.json")

  /** The cases of the list `name`. */
  def list(name: String): Seq[JsonNode] =
    new ObjectMapper().readTree(Files.readAllBytes(path)).get(name).elements().asScala.toSeq

  /** A case's `conf` set on a new SQLConf. */
  def confOf(c: JsonNode): SQLConf = {
    val conf = new SQLConf
    c.get("conf").fields().asScala.foreach(e => conf.setConfString(e.getKey, e.getValue.asText))
    conf
  }

  def longs(c: JsonNode, field: String): Array[Long] =
    c.get(field).elements().asScala.map(_.asLong).toArray

  def ints(c: JsonNode, field: String): Seq[Int] =
    c.get(field).elements().asScala.map(_.asInt).toSeq
}
