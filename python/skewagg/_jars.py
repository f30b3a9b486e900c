"""Finding the bundled jar that matches a Spark version."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Optional

from skewagg.errors import JarNotFoundError, UnsupportedSparkVersionError

JARS_DIR = Path(__file__).resolve().parent / "jars"

# skewagg-spark4.0_2.13-0.1.0.jar
_JAR_NAME = re.compile(r"^skewagg-spark(?P<line>\d+\.\d+)_(?P<scala>\d+\.\d+)-(?P<version>[^/]+)\.jar$")


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
    return sorted(bundled_jars(jars_dir))


def installed_spark_version() -> str:
    """The version of the installed pyspark."""
    try:
        import pyspark
    except ImportError as exc:  # pragma: no cover - pyspark is a dependency
        raise UnsupportedSparkVersionError(
            "pyspark is not installed; install it (pip install 'pyspark>=4.0,<4.1') or pass "
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
        raise UnsupportedSparkVersionError(
            f"skewagg has no jar for Spark {line} (running Spark {version}). This installation "
            f"supports Spark {', '.join(sorted(jars))}; install a matching pyspark, e.g. "
            f"pip install 'pyspark=={sorted(jars)[-1]}.*'."
        )
    return jars[line]
