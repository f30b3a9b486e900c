package org.apache.spark.sql.skewagg

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Path}

import scala.jdk.CollectionConverters._

import org.scalatest.funsuite.AnyFunSuite

/**
 * The package rules of docs/architecture.md ("Packages"), checked on the main sources (every
 * Spark line's shims included), in the tiers the package table's tier column gives ([[Tiers]]):
 * the kernel `org.apache.spark.sql.skewagg` uses no other skewagg package; a library
 * (`org.apache.spark.sql.skewagg.<library>`) uses the kernel only; a feature package uses the
 * kernel and libraries, no other feature; only the entry points (`io.skewagg`) use
 * `io.skewagg`. A use is an import (absolute, or relative to an enclosing package) or a fully
 * qualified name in code; comments and string literals do not count. The package table of
 * docs/architecture.md (and of its source, docs/src) lists every package, its tier and, in its
 * row, every file of it.
 */
class PackageDependenciesSuite extends AnyFunSuite {
  import PackageDependenciesSuite._

  private lazy val sources: Seq[Source] = mainSources(GenerateConfigDocs.projectRoot)
  private lazy val libraries: Set[String] = Tiers.libraries(Tiers.read(TierDoc))

  test("the main sources are found") {
    assert(sources.exists(_.pkg == Core), sources.map(_.path))
    assert(sources.exists(_.pkg == EntryPoints), sources.map(_.path))
    assert(features(sources).nonEmpty, sources.map(_.path))
    assert(libraries.nonEmpty && libraries.subsetOf(features(sources)), libraries)
  }

  test("the kernel uses no other package, a library the kernel only, a feature no other feature") {
    val problems = violations(sources, libraries)
    assert(problems.isEmpty, problems.mkString("\n", "\n", "\n"))
  }

  test("the tier column gives each package its tier, and the drawing names every tier's packages") {
    val tiers = Tiers.read(TierDoc)
    val problems = Tiers.problems(tiers, packagesSection(docText(TierDoc)))
    assert(problems.isEmpty, problems.mkString("\n", "\n", "\n"))
    assert(Tiers.read("docs/architecture.md") == tiers, "docs/architecture.md: other tiers")
  }

  test("a wrong tier, or a drawing that misses a library, is found") {
    val drawing = "```\n  features  localagg window\n  libraries  hotkey\n```\n"
    val tiers = Map(
      Core -> "kernel",
      s"$Core.localagg" -> "feature",
      s"$Core.window" -> "feature",
      s"$Core.hotkey" -> "library",
      s"$Core.ansi" -> "library",
      s"$EntryPoints.functions" -> "kernel",
      s"$Core.hints" -> "feture")
    val problems = Tiers.problems(tiers, drawing).mkString("\n")
    assert(problems.contains("the drawing's libraries line names hotkey, not ansi, hotkey"))
    assert(problems.contains(s"$EntryPoints.functions: tier kernel"), problems)
    assert(problems.contains(s"$Core.hints: tier feture"), problems)
    assert(Tiers.problems(
      tiers - s"$Core.ansi" - s"$EntryPoints.functions" -
        s"$Core.hints",
      drawing).isEmpty)
  }

  test("every main source declares the package of its directory") {
    val misplaced = sources.filterNot(s => s.dir == s.pkg.replace('.', '/'))
      .map(s => s"${s.path}: package ${s.pkg}, in directory ${s.dir}")
    assert(misplaced.isEmpty, misplaced.mkString("\n", "\n", "\n"))
  }

  for (doc <- Seq("docs/src/architecture.md", "docs/architecture.md")) {
    test(s"$doc lists every package, and every file in its package's row") {
      val rows = packageRows(docText(doc))
      val packages = sources.map(_.pkg).toSet
      assert(rows.keySet -- packages == Set.empty, s"$doc lists packages that do not exist")
      assert(packages -- rows.keySet == Set.empty, s"$doc misses packages in its Packages table")
      val unlisted = sources.filterNot(s => rows(s.pkg).contains(s"`${s.name}`"))
        .map(s => s"${s.path}: `${s.name}` is not in the row of ${s.pkg}")
      assert(unlisted.isEmpty, unlisted.mkString(s"\n$doc:\n", "\n", "\n"))
    }
  }

  test("the check sees imports and qualified names, not comments or strings") {
    def source(path: String, text: String): Source = Source.parse(path, text)
    val feature = s"$Core.localagg"
    val fixtures = Seq(
      source("a/Core1.scala", s"package $Core\n\nimport $feature.FlushingPartialAggregateExec\n"),
      source("a/Core2.scala", s"package $Core\n\nimport $Core.{localagg, SkewAggConf}\n"),
      source("a/Core3.scala", s"package $Core\n\nobject A {\n  import localagg._\n}\n"),
      source("a/Core4.scala", s"package $Core\n\nobject A { val x = $feature.RowFailures }\n"),
      source("b/Split.scala", s"package $Core.skewsplit\n\nimport $feature.GroupingKeyMap\n"),
      source("b/Single.scala", s"package $Core\npackage singlekey\n\nobject A { localagg.X }\n"),
      source("c/Uses.scala", s"package $feature\n\nimport io.skewagg.BuildInfo\n"),
      source("f/Lib1.scala", s"package $Core.hotkey\n\nimport $feature.GroupingKeyMap\n"),
      source("f/Lib2.scala", s"package $Core.hotkey\n\nimport $Core.ansi.WrappingLongSum\n"),
      source("f/Core5.scala", s"package $Core\n\nimport $Core.hotkey.HotKeyRanges\n"),
      source(
        "f/FeatureUsesLibs.scala",
        s"package $feature\n\nimport $Core.hotkey.HotKeyRanges\nimport $Core.SkewAggConf\n"),
      source(
        "d/Fine.scala",
        s"package $Core.explain\n\nimport $Core.SkewAggConf\n" +
          "// import org.apache.spark.sql.skewagg.localagg.X\n" +
          "object A { val s = \"org.apache.spark.sql.skewagg.localagg.X io.skewagg.Y\" }\n" +
          "/* io.skewagg.SkewAggExtensions */\n"),
      source(
        "e/Entry.scala",
        s"package $EntryPoints\n\nimport $feature.LocalAggregateBeforeJoin\n"))
    val found = violations(fixtures, Set("hotkey", "ansi"))
    Seq(
      "Core1.scala:3",
      "Core2.scala:3",
      "Core3.scala:4",
      "Core4.scala:3",
      "Split.scala:3",
      "Single.scala:4",
      "Uses.scala:3",
      "Lib1.scala:3",
      "Lib2.scala:3",
      "Core5.scala:3").foreach { at =>
      assert(found.exists(_.contains(s"/$at: ")), s"$at not found in:\n${found.mkString("\n")}")
    }
    assert(
      !found.exists(f =>
        Seq("Fine.scala", "Entry.scala", "FeatureUsesLibs.scala").exists(f.contains)),
      found.mkString("\n"))
  }
}

object PackageDependenciesSuite {
  val Core = "org.apache.spark.sql.skewagg"
  val EntryPoints = "io.skewagg"

  /** The doc whose package table gives the tiers (docs/architecture.md is generated from it). */
  val TierDoc = "docs/src/architecture.md"

  def docText(doc: String): String = new String(
    Files.readAllBytes(GenerateConfigDocs.projectRoot.resolve(doc)),
    StandardCharsets.UTF_8)

  /**
   * The tiers of the package table: each package's second cell, one of [[Tiers.Known]]. The
   * libraries (the kernel's subpackages that features share) are the packages of tier
   * `library`; every other subpackage of the kernel is a feature.
   */
  object Tiers {
    val Known: Set[String] = Set("entry points", "kernel", "library", "feature", "Spark's package")

    def read(doc: String): Map[String, String] = packageRows(docText(doc)).map {
      case (pkg, row) => pkg -> row.split('|').map(_.trim).lift(2).getOrElse("")
    }

    def libraries(tiers: Map[String, String]): Set[String] =
      tiers.collect { case (pkg, "library") => featureOf(pkg) }.flatten.toSet

    /**
     * What is wrong with `tiers` (each a known tier, and the one its package's name allows) and
     * with the drawing in `section` (the Packages section), whose `features` and `libraries`
     * lines name the packages of those tiers.
     */
    def problems(tiers: Map[String, String], section: String): Seq[String] = {
      def allowed(pkg: String): Set[String] =
        if (pkg == EntryPoints || pkg.startsWith(EntryPoints + ".")) Set("entry points")
        else if (pkg == Core) Set("kernel")
        else if (featureOf(pkg).isDefined) Set("library", "feature")
        else Set("Spark's package")
      val wrongTiers = tiers.toSeq.sorted.collect {
        case (pkg, tier) if !Known(tier) || !allowed(pkg)(tier) =>
          s"$pkg: tier $tier, where its name allows ${allowed(pkg).toSeq.sorted.mkString(" or ")}"
      }
      val drawing = section.split("```").lift(1).getOrElse("").split("\n").toSeq
      val drawn = Seq("features" -> "feature", "libraries" -> "library").flatMap {
        case (label, tier) =>
          val expected = tiers.collect { case (p, `tier`) => featureOf(p) }.flatten.toSet
          val line = drawing.find(_.trim.startsWith(label + " ")).getOrElse("")
          val named = line.trim.stripPrefix(label).split("[^a-z]+").toSet.intersect(
            tiers.keySet.flatMap(featureOf))
          if (named == expected) None
          else {
            Some(s"the drawing's $label line names ${named.toSeq.sorted.mkString(", ")}, " +
              s"not ${expected.toSeq.sorted.mkString(", ")}")
          }
      }
      wrongTiers ++ drawn
    }
  }

  /** A main source file: its path, directory and file name, package and code. */
  case class Source(path: String, dir: String, name: String, pkg: String, code: String) {

    /**
     * The subpackage (feature or library) this file is in (`localagg` for
     * `...skewagg.localagg.x`), if any.
     */
    def feature: Option[String] = featureOf(pkg)
  }

  object Source {
    def parse(path: String, text: String): Source = {
      val code = withoutCommentsAndStrings(text)
      // Chained package clauses (`package a.b` then `package c`) name one package: a.b.c.
      val pkg = """(?m)^package\s+([\w.]+)\s*$""".r.findAllMatchIn(code).map(_.group(1))
        .mkString(".")
      val file = path.substring(path.lastIndexOf('/') + 1)
      val dir = path.substring(0, math.max(0, path.lastIndexOf('/')))
      Source(path, dir, file.stripSuffix(".scala"), pkg, code)
    }
  }

  /** `localagg` for `org.apache.spark.sql.skewagg.localagg` and its sub-packages. */
  def featureOf(pkg: String): Option[String] =
    if (pkg.startsWith(Core + ".")) Some(pkg.stripPrefix(Core + ".").takeWhile(_ != '.'))
    else None

  def features(sources: Seq[Source]): Set[String] = sources.flatMap(_.feature).toSet

  /**
   * The main sources under `root`: scala/src/main/scala and every shim directory
   * (scala/src/main/spark-*). A source's directory is relative to its source directory (the
   * package path); its path, in messages, relative to `root`.
   */
  def mainSources(root: Path): Seq[Source] = {
    def files(dir: Path, walk: Path => java.util.stream.Stream[Path]): Seq[Path] = {
      val stream = walk(dir)
      try stream.iterator().asScala.toSeq.sortBy(_.toString)
      finally stream.close()
    }
    def slashed(p: Path): String = p.toString.replace('\\', '/')
    files(root.resolve("scala/src/main"), Files.list(_))
      .filter(d =>
        Files.isDirectory(d) && (d.getFileName.toString == "scala" ||
          d.getFileName.toString.startsWith("spark-")))
      .flatMap { dir =>
        files(dir, Files.walk(_)).filter(_.toString.endsWith(".scala")).map { file =>
          val text = new String(Files.readAllBytes(file), StandardCharsets.UTF_8)
          Source.parse(slashed(dir.relativize(file)), text)
            .copy(path = slashed(root.relativize(file)))
        }
      }
  }

  /** The packages a use in `source` reaches, with the 1-based line of each use. */
  def uses(source: Source, featureNames: Set[String]): Seq[(Int, String)] = {
    val code = source.code
    def lineAt(offset: Int): Int = code.substring(0, offset).count(_ == '\n') + 1
    // Fully qualified names anywhere in code, imports included.
    val qualified = ("""(?<![\w.])(?:_root_\.)?(org\.apache\.spark\.sql\.skewagg(?:\.[a-z]\w*)?""" +
      """|io\.skewagg)\b""").r.findAllMatchIn(code).map { m =>
      val name = m.group(1)
      val pkg = featureOf(name).filter(featureNames).map(f => s"$Core.$f").getOrElse(
        if (name.startsWith(EntryPoints)) EntryPoints else Core)
      (lineAt(m.start), pkg)
    }.toSeq
    // Selectors of the core package that name a feature: import ...skewagg.{localagg, ...}.
    val selected = ("""(?<![\w.])(?:_root_\.)?org\.apache\.spark\.sql\.skewagg\.\{([^}]*)\}""")
      .r.findAllMatchIn(code).flatMap { m =>
        m.group(1).split(',').map(_.trim.takeWhile(c => c.isLetterOrDigit || c == '_'))
          .filter(featureNames).map(f => (lineAt(m.start), s"$Core.$f"))
      }.toSeq
    // Names relative to an enclosing package: `import localagg._`, `localagg.X` (visible to
    // the core package, and to a feature file whose package clauses are chained).
    val parentVisible = source.pkg == Core ||
      """(?m)^package\s+org\.apache\.spark\.sql\.skewagg\s*$""".r.findFirstIn(code).isDefined
    val relative = if (!parentVisible) Nil
    else {
      """(?<![\w.])([a-z]\w*)\s*\.""".r.findAllMatchIn(code)
        .filter(m => featureNames(m.group(1)))
        .filter(m =>
          !code.substring(0, m.start).reverse.dropWhile(_ == ' ')
            .startsWith("egakcap")) // the feature's own `package localagg` clause
        .map(m => (lineAt(m.start), s"$Core.${m.group(1)}")).toSeq
    }
    (qualified ++ selected ++ relative).distinct.sortBy(_._1)
  }

  /** Every use that breaks the package rules, as `path:line: what`. */
  def violations(sources: Seq[Source], libraries: Set[String]): Seq[String] = {
    def tier(subpackage: String): String =
      if (libraries(subpackage)) "library" else "feature package"
    val featureNames = features(sources) ++ libraries
    sources.flatMap { source =>
      val lines = source.code.split("\n", -1)
      uses(source, featureNames).flatMap { case (line, used) =>
        val usedFeature = featureOf(used)
        val why =
          if (used == EntryPoints && source.pkg != EntryPoints &&
            !source.pkg.startsWith(EntryPoints + ".")) {
            Some(s"only $EntryPoints may use $EntryPoints")
          } else if (source.pkg == Core && usedFeature.isDefined) {
            Some(s"the kernel uses ${tier(usedFeature.get)} $used")
          } else if (source.feature.exists(libraries) && usedFeature.isDefined &&
            usedFeature != source.feature) {
            Some(s"library ${source.pkg} uses ${tier(usedFeature.get)} $used")
          } else if (source.feature.isDefined && usedFeature.exists(f => !libraries(f)) &&
            usedFeature != source.feature) {
            Some(s"feature package ${source.pkg} uses another feature package, $used")
          } else None
        why.map(w => s"${source.path}:$line: $w: ${lines(line - 1).trim}")
      }
    }
  }

  /**
   * `text` with comments and string literals blanked out (newlines kept, so lines keep their
   * numbers); the expressions of interpolated strings (`${...}`, `$name`) stay, as they are code.
   */
  def withoutCommentsAndStrings(text: String): String = {
    val out = new StringBuilder
    def blank(s: String): Unit = out ++= s.map(c => if (c == '\n') '\n' else ' ')
    val n = text.length
    var i = 0
    while (i < n) {
      if (text.startsWith("//", i)) {
        val end = text.indexOf('\n', i) match { case -1 => n; case e => e }
        blank(text.substring(i, end)); i = end
      } else if (text.startsWith("/*", i)) {
        var depth = 0
        val start = i
        var done = false
        while (i < n && !done) {
          if (text.startsWith("/*", i)) { depth += 1; i += 2 }
          else if (text.startsWith("*/", i)) { depth -= 1; i += 2; done = depth == 0 }
          else i += 1
        }
        blank(text.substring(start, i))
      } else if (text.charAt(i) == '\'' && i + 2 < n &&
        (text.charAt(i + 2) == '\'' || (text.charAt(i + 1) == '\\' && i + 3 < n &&
          text.charAt(i + 3) == '\''))) {
        val end = if (text.charAt(i + 2) == '\'') i + 3 else i + 4
        blank(text.substring(i, end)); i = end
      } else if (text.charAt(i) == '"') {
        val interpolated =
          i > 0 && (text.charAt(i - 1).isLetterOrDigit || text.charAt(i - 1) == '_')
        val quote = if (text.startsWith("\"\"\"", i)) "\"\"\"" else "\""
        blank(quote); i += quote.length
        var closed = false
        while (i < n && !closed) {
          if (quote == "\"" && text.charAt(i) == '\\' && i + 1 < n) {
            blank(text.substring(i, i + 2)); i += 2
          } else if (text.startsWith(quote, i)) {
            var end = i + quote.length
            while (quote.length == 3 && end < n && text.charAt(end) == '"') end += 1
            blank(text.substring(i, end)); i = end; closed = true
          } else if (interpolated && text.startsWith("${", i)) {
            var depth = 0
            var j = i + 1
            while (j < n && !(text.charAt(j) == '}' && depth == 1)) {
              if (text.charAt(j) == '{') depth += 1
              else if (text.charAt(j) == '}') depth -= 1
              j += 1
            }
            blank("${"); out ++= text.substring(i + 2, j); blank("}"); i = j + 1
          } else if (interpolated && text.charAt(i) == '$' && i + 1 < n &&
            (text.charAt(i + 1).isLetter || text.charAt(i + 1) == '_')) {
            var j = i + 1
            while (j < n && (text.charAt(j).isLetterOrDigit || text.charAt(j) == '_')) j += 1
            blank("$"); out ++= text.substring(i + 1, j); i = j
          } else {
            blank(text.substring(i, i + 1)); i += 1
          }
        }
      } else {
        out += text.charAt(i); i += 1
      }
    }
    out.toString
  }

  /**
   * The rows of the "Packages" table of an architecture doc, by package: a row starts with the
   * package in backquotes (anything after it in the first cell, such as "(core)", is ignored).
   */
  def packageRows(doc: String): Map[String, String] =
    packagesSection(doc).split("\n").toSeq.flatMap { line =>
      """^\| `([\w.]+)`""".r.findFirstMatchIn(line).map(m => m.group(1) -> line)
    }.toMap

  /** The "Packages" section of an architecture doc, to the next section. */
  def packagesSection(doc: String): String = {
    val start = doc.indexOf("\n## Packages")
    require(start >= 0, "no \"## Packages\" section")
    val end = doc.indexOf("\n## ", start + 1) match { case -1 => doc.length; case e => e }
    doc.substring(start, end)
  }
}
