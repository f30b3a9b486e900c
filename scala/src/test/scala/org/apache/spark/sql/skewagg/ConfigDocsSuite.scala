package org.apache.spark.sql.skewagg

import java.nio.charset.StandardCharsets
import java.nio.file.Files

import org.scalatest.funsuite.AnyFunSuite

class ConfigDocsSuite extends AnyFunSuite {

  /** The committed file at `relative` is what `rendered` says (`make docs` writes it). */
  private def assertCurrent(relative: String, rendered: String): Unit = {
    val path = GenerateConfigDocs.projectRoot.resolve(relative)
    assert(Files.exists(path), s"$path is missing: run `make docs`")
    val committed = new String(Files.readAllBytes(path), StandardCharsets.UTF_8)
    assert(committed == rendered, s"$path is stale: run `make docs` and commit the result")
  }

  test("docs/configs.md is generated from SkewAggConf and current") {
    assertCurrent(GenerateConfigDocs.relativePath, GenerateConfigDocs.render())
  }

  test("python/skewagg/advisor/skew_settings.json is generated from SkewAggConf and current") {
    assertCurrent(GenerateConfigDocs.skewSettingsPath, GenerateConfigDocs.renderSkewSettings())
  }

  test("every key is spark.skewagg.<area>.<name>, booleans end in .enabled, all documented") {
    assert(SkewAggConf.entries.nonEmpty)
    SkewAggConf.entries.foreach { e =>
      assert(e.key.matches("""spark\.skewagg(\.[a-z][A-Za-z0-9]*)+"""), e.key)
      assert(e.doc.nonEmpty, s"${e.key} has no doc")
      assert(e.version.nonEmpty, s"${e.key} has no since-version")
      if (e.defaultValue.exists(_.isInstanceOf[Boolean])) {
        assert(e.key.endsWith(".enabled"), s"boolean ${e.key} must end in .enabled")
      }
    }
    assert(SkewAggConf.entries.map(_.key).distinct.size == SkewAggConf.entries.size)
  }
}
