"""Every helper from a Spark Connect client, against a server started with skewagg: the same
answers as classic PySpark, and a clear error for each classic-only call."""

from __future__ import annotations

import os
import re
from contextlib import redirect_stdout
from io import StringIO
from typing import Any, Callable, Dict

import pytest
from pyspark.sql import SparkSession

import skewagg
from helper_cases import (
    CASES,
    SETTINGS,
    explain_after_run,
    explain_before_run,
    settings,
    skewed_join,
)
from skewagg.errors import ConnectNotSupportedError


def test_the_session_is_a_connect_client_of_a_server_with_skewagg(spark: SparkSession) -> None:
    assert type(spark).__module__.startswith("pyspark.sql.connect")
    assert skewagg.is_active(spark)
    assert skewagg.loaded_version(spark).startswith(f"skewagg {skewagg.__version__}")


@pytest.fixture(scope="module")
def client_answer(spark: SparkSession) -> Callable[[str], Any]:
    """A case's answer on the client, computed once for the tests that read it."""
    answers: Dict[str, Any] = {}

    def answer(case: str) -> Any:
        if case not in answers:
            with settings(spark, SETTINGS):
                answers[case] = CASES[case](spark)
        return answers[case]
    return answer


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_helper_answers_as_in_classic_pyspark(
        client_answer: Callable[[str], Any], classic_answers: Dict[str, Any], case: str) -> None:
    assert client_answer(case) == classic_answers[case]


def test_the_rewrite_is_seen_through_the_client(spark: SparkSession) -> None:
    """The client's explanations, read through the server: the rewrite once the query ran."""
    with settings(spark, SETTINGS):
        after = explain_after_run(spark)
        before = explain_before_run(spark)
    assert "aggregate 1" in after and "rewritten" in after, after
    assert "not decided yet" in before or "rewritten" in before, before


def test_a_window_without_partition_by_is_split_through_the_client(
        client_answer: Callable[[str], Any]) -> None:
    """Run from the client: Spark's rows, and the one task split by order on the server."""
    answer = client_answer("window_without_partition_by")
    assert answer[-2:] == [True, True], answer
    assert answer[0] == 30000, answer


def test_heavy_partial_states_are_merged_in_two_levels_through_the_client(
        client_answer: Callable[[str], Any]) -> None:
    """Run from the client: Spark's rows, and each key's 32 states merged in two levels on the
    server."""
    answer = client_answer("heavy_states_of_few_keys")
    assert answer[-1] is True, answer
    assert [row[0] for row in answer[:-1]] == [0, 1, 2, 3], answer


def test_explain_before_a_run_names_what_a_connect_user_can_do(spark: SparkSession) -> None:
    with settings(spark, {**SETTINGS, "spark.skewagg.join.localAggregate.enabled": "false"}):
        text = skewagg.explain_text(skewed_join(spark, 6))
        extended = StringIO()
        with redirect_stdout(extended):
            skewed_join(spark, 6).explain("extended")
    assert "not decided yet" in text and "skewagg.explain(df)" in text, text
    section = extended.getvalue().split("(skewagg) ==", 1)[1]
    assert "With Spark Connect" in section and "skewagg_explain(TABLE(q))" in section, section


def test_classic_only_calls_raise_naming_the_alternative(spark: SparkSession) -> None:
    from plans import reported
    from skewagg.stage_report import TaskTimeRecorder

    with pytest.raises(ConnectNotSupportedError, match="skewagg.stage_report"):
        TaskTimeRecorder(spark)
    with pytest.raises(ConnectNotSupportedError, match="skewagg.explain"):
        reported(skewed_join(spark, 7))


def test_the_readme_client_code_runs(spark: SparkSession) -> None:
    readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md")).read()
    section = readme.split("### With Spark Connect", 1)[1].split("\n### ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert 'remote("sc://localhost:15002")' in code
    code = code.replace("sc://localhost:15002", os.environ["SKEWAGG_CONNECT_URL"])
    out = StringIO()
    with redirect_stdout(out):
        exec(compile(code, "README.md (With Spark Connect)", "exec"), {})
    printed = out.getvalue()
    assert "aggregate 1: group by [region]" in printed, printed
    assert "Stage report" in printed and "Skew report for groupBy(store)" in printed, printed
