"""Finding the bundled jar that matches the Spark that runs.

The Spark is, first found: the SparkContext running in this process, else ``$SPARK_HOME``'s (what
PySpark and spark-submit start when it is set: a cluster's own Spark), else the imported pyspark's.
Nothing here imports pyspark unless the first two say nothing, so ``python -m skewagg jar-path``
works on a machine whose only Spark is ``$SPARK_HOME``.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from skewagg._bridge import context_scala_version
from skewagg.errors import JarNotFoundError, SparkNotFoundError, UnsupportedSparkVersionError
from skewagg.version import __version__

JARS_DIR = Path(__file__).resolve().parent / "jars"

# skewagg-spark4.0_2.13-0.1.0.jar
JAR_NAME = re.compile(
    r"^skewagg-spark(?P<line>\d+\.\d+)_(?P<scala>\d+\.\d+)-(?P<version>[^/]+)\.jar$")

# spark-core_2.12-3.5.9.jar: the Scala binary and the version of a Spark distribution's jars.
_SPARK_CORE = re.compile(r"^spark-core_(?P<scala>\d+\.\d+)-(?P<version>[^/]+)\.jar$")


def _major_minor(version: str, what: str, example: str) -> str:
    match = re.match(r"^(\d+)\.(\d+)", version.strip())
    if not match:
        raise ValueError(f"not a {what} version: {version!r} (expected e.g. '{example}')")
    return f"{match.group(1)}.{match.group(2)}"


def spark_line(version: str) -> str:
    """The major.minor line of a Spark version string: ``"4.0.1"`` -> ``"4.0"``."""
    return _major_minor(version, "Spark", "4.0.1")


def scala_binary(version: str) -> str:
    """The binary version of a Scala version string: ``"2.12.18"`` -> ``"2.12"``."""
    return _major_minor(version, "Scala", "2.13")


def line_order(line: str) -> Tuple[int, ...]:
    """``"4.10"`` -> ``(4, 10)``: lines compared as numbers."""
    return tuple(int(part) for part in line.split("."))


def bundled_jars(jars_dir: Path = JARS_DIR) -> Dict[Tuple[str, str], Path]:
    """The bundled jars by Spark line and Scala binary (``{("3.5", "2.12"): Path(...)}``)."""
    found: Dict[Tuple[str, str], Path] = {}
    if jars_dir.is_dir():
        for path in sorted(jars_dir.iterdir()):
            match = JAR_NAME.match(path.name)
            if match:
                found.setdefault((match.group("line"), match.group("scala")), path)
    return found


def supported_spark_lines(jars_dir: Path = JARS_DIR) -> List[str]:
    """The Spark major.minor lines this installation has a jar for."""
    return sorted({line for line, _ in bundled_jars(jars_dir)}, key=line_order)


@dataclass(frozen=True)
class RunningSpark:
    """The Spark a session started here runs: its version, its Scala binary (None when unknown)
    and where that was read (for messages)."""

    version: str
    scala: Optional[str]
    source: str
    kind: str
    """``"context"`` (a SparkContext running here), ``"spark_home"`` or ``"pyspark"``."""


def _distribution(jars: Path) -> Optional[Tuple[str, str]]:
    """``(Spark version, Scala binary)`` of a directory of Spark's jars, read off its
    ``spark-core_<scala>-<version>.jar``; None when there is none."""
    if not jars.is_dir():
        return None
    for path in sorted(jars.iterdir()):
        match = _SPARK_CORE.match(path.name)
        if match:
            return match.group("version"), match.group("scala")
    return None


def _running_context() -> Optional[RunningSpark]:
    """The SparkContext running in this process, if pyspark is imported and has one."""
    if "pyspark" not in sys.modules:
        return None
    try:
        from pyspark import SparkContext

        sc = SparkContext._active_spark_context
        if sc is None:
            return None
        version = str(sc.version)
    except Exception:  # a pyspark without a classic SparkContext (pyspark-client)
        return None
    scala = context_scala_version(sc)
    return RunningSpark(version, scala_binary(scala) if scala else None,
                        f"the running SparkContext (Spark {version})", "context")


def running_spark() -> RunningSpark:
    """The Spark a session started here runs (see the module's doc).

    Raises :class:`SparkNotFoundError` when there is none: no SparkContext running, no
    ``$SPARK_HOME`` holding a Spark's jars and no importable pyspark.
    """
    found = _running_context()
    if found is not None:
        return found
    home = os.environ.get("SPARK_HOME")
    if home:
        dist = _distribution(Path(home) / "jars")
        if dist is not None:
            version, scala = dist
            return RunningSpark(version, scala, f"SPARK_HOME's Spark {version} ({home})",
                                "spark_home")
    try:
        import pyspark
    except ImportError:
        unread = (f"SPARK_HOME={home} holds no jars/spark-core_*.jar, " if home else
                  "SPARK_HOME is not set, ")
        raise SparkNotFoundError(
            f"skewagg found no Spark to pick a jar for: {unread}and pyspark is not importable. "
            "Set SPARK_HOME to your Spark's directory (the one holding jars/), install a "
            "supported pyspark (pip install 'pyspark>=3.5,<4.4'), or name the Spark version "
            "(python -m skewagg jar-path --spark-version 3.5.9; spark_version=...)."
        ) from None
    version = str(pyspark.__version__)
    where = Path(pyspark.__file__).resolve().parent
    dist = _distribution(where / "jars")
    return RunningSpark(version, dist[1] if dist else None, f"pyspark {version} ({where})",
                        "pyspark")


def running_spark_version() -> str:
    """The version of the Spark a session started here runs (see :func:`running_spark`)."""
    return running_spark().version


def jar_for(
    spark_version: Optional[str] = None,
    jars_dir: Path = JARS_DIR,
    scala_version: Optional[str] = None,
) -> Path:
    """The bundled jar for ``spark_version`` (default: that of :func:`running_spark`) and Scala
    ``scala_version`` (``"2.12"`` or ``"2.13"``; default: that of the running Spark when it is
    of the same line, else the line's default build, the oldest Scala bundled for it: Spark 3.5's
    downloads and pyspark are Scala 2.12, Spark 4's 2.13)."""
    running: Optional[RunningSpark] = None
    if spark_version is None:
        running = running_spark()
        version = running.version
    else:
        version = spark_version
        try:
            running = running_spark()
        except SparkNotFoundError:
            running = None
    line = spark_line(version)
    jars = bundled_jars(jars_dir)
    if not jars:
        raise JarNotFoundError(
            f"no skewagg jar is bundled in {jars_dir}. From a source checkout, build it with "
            "`make jar` (or install the wheel `make dist` builds, which bundles every line's)."
        )
    builds = {scala: path for (l, scala), path in jars.items() if l == line}
    if not builds:
        said = running if spark_version is None else None
        raise UnsupportedSparkVersionError(
            _unsupported(version, line, supported_spark_lines(jars_dir), said))
    scala = scala_binary(scala_version) if scala_version else None
    if scala is None and running is not None and spark_line(running.version) == line:
        scala = running.scala
    if scala is None:
        return builds[min(builds, key=line_order)]
    if scala not in builds:
        have = ", ".join(f"Scala {s}" for s in sorted(builds, key=line_order))
        raise UnsupportedSparkVersionError(
            f"skewagg has no jar for Spark {line} built with Scala {scala} (it has {have} for "
            f"Spark {line}). A jar of another Scala binary does not load in that Spark. Run a "
            f"Spark {line} build for {have}, or pass scala_version= (python -m skewagg jar-path "
            "--scala-version) naming the Scala of the Spark you run."
        )
    return builds[scala]


def _unsupported(version: str, line: str, supported: List[str],
                 running: Optional[RunningSpark]) -> str:
    """Why Spark ``version`` (of ``line``; found as ``running`` says, or asked for) has no jar,
    and what to do instead. The user's Spark is theirs: never advice to replace it silently."""
    lines = ", ".join(supported)
    if running is None:
        what = f"Spark {version} was asked for"
        instead = f"name a Spark of a supported line (e.g. --spark-version {supported[-1]}.0)"
    elif running.kind == "pyspark":
        what = f"the Spark here is {running.source}"
        instead = (f"use a pyspark of a supported line (e.g. pip install "
                   f"'pyspark=={supported[-1]}.*' in a virtualenv of its own)")
    elif running.kind == "spark_home":
        what = f"the Spark here is {running.source}"
        instead = f"point SPARK_HOME at a Spark {lines} distribution"
    else:
        what = f"the Spark here is {running.source}"
        instead = f"run the application on Spark {lines}"
    if line_order(line) > line_order(supported[-1]):
        why = (f"Spark {line} is newer than the lines this skewagg was built for; a later "
               f"skewagg may support it (CHANGELOG.md lists each version's lines)")
    else:
        why = f"skewagg does not support Spark {line}, older than {supported[0]}"
    return (
        f"skewagg {__version__} has no jar for Spark {line}: {what}, and it supports Spark "
        f"{lines}. {why}. To use skewagg, {instead}."
    )
