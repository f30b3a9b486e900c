"""skewagg from a Spark Connect client: a server started with the README's command, and the
client tests of tests/connect/ run in a pytest process of their own (no JVM of its own), which
compare each helper's answer with classic PySpark's answer computed here."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from conftest import SPARK_LINE
from connect_server import connect_server, readme_server_command
from helper_cases import answers
from subprocesses import TESTS, child_env, run

pytestmark = [
    pytest.mark.packaging,
    pytest.mark.connect,
    pytest.mark.spread,
    pytest.mark.skipif(SPARK_LINE < (4, 0), reason="the Connect tests run on the Spark 4 lines"),
    pytest.mark.skipif(importlib.util.find_spec("grpc") is None,
                       reason="the Spark Connect client's packages (requirements-connect.txt)"),
]

SERVER_SETTINGS = [
    # What the classic test session has (tests/conftest.py): the answers compare.
    "--master", "local[2]",
    "--conf", "spark.sql.shuffle.partitions=8",
    "--conf", "spark.skewagg.skew.taskSlots=64",
    "--conf", "spark.ui.enabled=false",
    "--driver-memory", "1g",
]


def test_the_readme_starts_the_server_with_skewagg_flags() -> None:
    command = readme_server_command()
    assert command.startswith(
        "spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer")
    assert "$(python -m skewagg server-conf)" in command


def test_every_helper_from_a_connect_client(spark: SparkSession, tmp_path: Path) -> None:
    classic = tmp_path / "classic.json"
    classic.write_text(json.dumps(answers(spark)))
    with connect_server(SERVER_SETTINGS) as url:
        result = run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o",
             "addopts=-ra --strict-markers", str(TESTS / "connect")],
            env=child_env(SKEWAGG_CONNECT_URL=url, SKEWAGG_CLASSIC_ANSWERS=str(classic)),
            timeout=900)
    assert result.returncode == 0, f"{result.stdout[-8000:]}\n{result.stderr[-4000:]}"
    assert " passed" in result.stdout and " skipped" not in result.stdout, result.stdout
