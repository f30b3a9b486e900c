"""Finding the bundled jar that matches a Spark version."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from skewagg.errors import JarNotFoundError, UnsupportedSparkVersionError

JARS_DIR = Path(__file__).resolve().parent / "jars"

# skewagg-spark4.0_2.13-0.1.0.jar
_JAR_NAME = re.compile(
    r"^skewagg-spark(?P<line>\d+\.\d+)_(?P<scala>\d+\.\d+)-(?P<version>[^/]+)\.jar$")


def spark_line(version: str) -> str:
    """The major.minor line of a Spark version string: ``"4.0.1"`` -> ``"4.0"``."""
    match = re.match(r"^(\d+)\.(\d+)", version.strip())
    if not match:
        raise ValueError(f"not a Spark version: {version!r} (expected e.g. '4.0.1')")
    return f"{match.group(1)}.{match.group(2)}"


def bundled_jars(jars_dir: Path = JARS_DIR) -> Dict[str, Path]:
    """The bundled jars by Spark line (``{"4.0": Path(...)}``)."""
    found: Dict[str, Path] = {}
    if jars_dir.is_dir():
        for path in sorted(jars_dir.iterdir()):
            match = _JAR_NAME.match(path.name)
            if match:
                found.setdefault(match.group("line"), path)
    return found


def supported_spark_lines(jars_dir: Path = JARS_DIR) -> List[str]:
    """The Spark major.minor lines this installation has a jar for."""
    return sorted(bundled_jars(jars_dir), key=_order)


def installed_spark_version() -> str:
    """The version of the installed pyspark."""
    try:
        import pyspark
    except ImportError as exc:  # pragma: no cover - pyspark is a dependency
        raise UnsupportedSparkVersionError(
            "pyspark is not installed; install it (pip install 'pyspark>=4.0,<4.4') or pass "
            "spark_version=... to say which Spark the jar is for"
        ) from exc
    return pyspark.__version__


def jar_for(spark_version: Optional[str] = None, jars_dir: Path = JARS_DIR) -> Path:
    """The bundled jar for ``spark_version`` (default: the installed pyspark's)."""
    version = spark_version or installed_spark_version()
    line = spark_line(version)
    jars = bundled_jars(jars_dir)
    if not jars:
        raise JarNotFoundError(
            f"no skewagg jar is bundled in {jars_dir}. From a source checkout, build it with "
            "`make jar` (or reinstall with `pip install .`, which builds it)."
        )
    if line not in jars:
        raise UnsupportedSparkVersionError(_unsupported(version, line, sorted(jars, key=_order)))
    return jars[line]


def _order(line: str) -> Tuple[int, ...]:
    return tuple(int(part) for part in line.split("."))


def _unsupported(version: str, line: str, supported: List[str]) -> str:
    """Why Spark ``version`` (of ``line``) has no jar, and what to do instead."""
    from skewagg import __version__

    lines = ", ".join(supported)
    if _order(line) > _order(supported[-1]):
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
