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
    proc = run([sys.executable, "-m", "skewagg", "jar-path", "--spark-version", "3.4.1"])
    assert proc.returncode == 2
    assert "no jar for Spark 3.4" in proc.stderr
    assert "supports Spark 3.5, 4.0" in proc.stderr


def test_jar_path_picks_the_scala_build_asked_for() -> None:
    for scala in ("2.12", "2.13"):
        proc = run([sys.executable, "-m", "skewagg", "jar-path", "--spark-version", "3.5.9",
                    "--scala-version", scala])
        assert proc.returncode == 0, proc.stderr
        assert Path(proc.stdout.strip()).name.startswith(f"skewagg-spark3.5_{scala}-")
    proc = run([sys.executable, "-m", "skewagg", "jar-path", "--spark-version", "4.0.1",
                "--scala-version", "2.12"])
    assert proc.returncode == 2
    assert "no jar for Spark 4.0 built with Scala 2.12 (it has Scala 2.13" in proc.stderr


def test_spark_lines_lists_what_is_bundled() -> None:
    proc = run([sys.executable, "-m", "skewagg", "spark-lines"])
    assert proc.returncode == 0 and proc.stdout.split() == skewagg.supported_spark_lines()


def test_server_conf_prints_the_flags_a_connect_server_needs() -> None:
    proc = run([sys.executable, "-m", "skewagg", "server-conf"])
    assert proc.returncode == 0, proc.stderr
    lines = [line.rstrip(" \\") for line in proc.stdout.strip().splitlines()]
    assert lines[0] == f"--jars {skewagg.jar_path()}"
    assert f"--conf spark.sql.extensions={skewagg.EXTENSION_CLASS}" in lines
    assert " ".join(lines).split() == skewagg.server_flags()
