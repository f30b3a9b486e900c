import sys
from pathlib import Path

import pytest

import skewagg
from subprocesses import run

pytestmark = pytest.mark.packaging


def test_jar_path_prints_the_bundled_jar() -> None:
    proc = run([sys.executable, "-m", "skewagg", "jar-path"])
    assert proc.returncode == 0, proc.stderr
    path = Path(proc.stdout.strip())
    assert path.is_file() and str(path) == skewagg.jar_path()


def test_jar_path_for_an_unsupported_spark_fails_listing_supported_lines() -> None:
    proc = run([sys.executable, "-m", "skewagg", "jar-path", "--spark-version", "3.5.1"])
    assert proc.returncode == 2
    assert "no jar for Spark 3.5" in proc.stderr
    assert "supports Spark 4.0" in proc.stderr


def test_spark_lines_lists_what_is_bundled() -> None:
    proc = run([sys.executable, "-m", "skewagg", "spark-lines"])
    assert proc.returncode == 0 and proc.stdout.split() == skewagg.supported_spark_lines()
