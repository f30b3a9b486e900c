"""Finding the bundled jar that matches a Spark version."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from skewagg.errors import JarNotFoundError, UnsupportedSparkVersionError

JARS_DIR = Path(__file__).resolve().parent / "jars"

# skewagg-spark4.0_2.13-0.1.0.jar
JAR_NAME = re.compile(
    r"^skewagg-spark(?P<line>\d+\.\d+)_(?P<scala>\d+\.\d+)-(?P<version>[^/]+)\.jar$")


def _major_minor(version: str, what: str, example: str) -> str:
    match = re.match(r"^(\d+)\.(\d+)", version.strip())
    if not match:
        raise ValueError(f"not a {what} version: {version!r} (expected e.g. '{example}')")
    return f"{match.group(1)}.{match.group(2)}"


def spark_line(version: str) -> str:
    """The major.minor line of a Spark version string: ``"4.0.1"`` -> ``"4.0"``."""
    return _major_minor(version, "Spark", "4.0.1")


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


def installed_spark_version() -> str:
    """The version of the installed pyspark."""
    try:
        import pyspark
    except ImportError as exc:  # pragma: no cover - pyspark is a dependency
        raise UnsupportedSparkVersionError(
            "pyspark is not installed; install it (pip install 'pyspark>=3.5,<4.4') or pass "
            "spark_version=... to say which Spark the jar is for"
        ) from exc
    return pyspark.__version__


# spark-core_2.12-3.5.9.jar: the Scala binary and the version of a Spark distribution's jars.
_SPARK_CORE = re.compile(r"^spark-core_(?P<scala>\d+\.\d+)-(?P<version>[^/]+)\.jar$")


def _spark_jars_dir() -> Optional[Path]:
    """The jars of the Spark that PySpark starts: ``$SPARK_HOME/jars`` when SPARK_HOME is set
    (as PySpark and spark-submit read it), else those of the installed pyspark."""
    import os

    home = os.environ.get("SPARK_HOME")
    if home:
        return Path(home) / "jars"
    try:
        import pyspark
    except ImportError:  # pragma: no cover - pyspark is a dependency
        return None
    return Path(pyspark.__file__).resolve().parent / "jars"


def running_spark_build(jars_dir: Optional[Path] = None) -> Optional[Tuple[str, str]]:
    """``(Spark version, Scala binary)`` of the Spark that PySpark starts, read off its
    ``spark-core_<scala>-<version>.jar``; None when there is none to read."""
    jars = jars_dir if jars_dir is not None else _spark_jars_dir()
    if jars is None or not jars.is_dir():
        return None
    for path in sorted(jars.iterdir()):
        match = _SPARK_CORE.match(path.name)
        if match:
            return match.group("version"), match.group("scala")
    return None


def jar_for(
    spark_version: Optional[str] = None,
    jars_dir: Path = JARS_DIR,
    scala_version: Optional[str] = None,
) -> Path:
    """The bundled jar for ``spark_version`` (default: the installed pyspark's) and Scala
    ``scala_version`` (``"2.12"`` or ``"2.13"``; default: that of the Spark PySpark starts when
    it is of the same line, else the line's default build, the oldest Scala bundled for it:
    Spark 3.5's downloads and pyspark are Scala 2.12, Spark 4's 2.13)."""
    version = spark_version or installed_spark_version()
    line = spark_line(version)
    jars = bundled_jars(jars_dir)
    if not jars:
        raise JarNotFoundError(
            f"no skewagg jar is bundled in {jars_dir}. From a source checkout, build it with "
            "`make jar` (or reinstall with `pip install .`, which builds it)."
        )
    builds = {scala: path for (l, scala), path in jars.items() if l == line}
    if not builds:
        raise UnsupportedSparkVersionError(
            _unsupported(version, line, supported_spark_lines(jars_dir)))
    scala = scala_binary(scala_version) if scala_version else None
    if scala is None:
        running = running_spark_build()
        if running is not None and spark_line(running[0]) == line:
            scala = running[1]
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


def scala_binary(version: str) -> str:
    """The binary version of a Scala version string: ``"2.12.18"`` -> ``"2.12"``."""
    return _major_minor(version, "Scala", "2.13")


def line_order(line: str) -> Tuple[int, ...]:
    """``"4.10"`` -> ``(4, 10)``: lines compared as numbers."""
    return tuple(int(part) for part in line.split("."))


def _unsupported(version: str, line: str, supported: List[str]) -> str:
    """Why Spark ``version`` (of ``line``) has no jar, and what to do instead."""
    from skewagg import __version__

    lines = ", ".join(supported)
    if line_order(line) > line_order(supported[-1]):
        advice = (
            "Try the newest skewagg (pip install --upgrade skewagg), which may support it, or "
            f"install a supported pyspark, e.g. pip install 'pyspark=={supported[-1]}.*'."
        )
    else:
        advice = (
            f"No skewagg release supports Spark {line} yet; run on a supported line, e.g. "
            f"pip install 'pyspark=={supported[-1]}.*'."
        )
    return (
        f"skewagg {__version__} has no jar for Spark {line} (running Spark {version}); it "
        f"supports Spark {lines}. {advice}"
    )
