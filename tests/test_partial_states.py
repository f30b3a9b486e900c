"""Heavy partial states of few keys merged in two levels (issue 68), from PySpark: Spark's rows
with skewagg off and on, adaptive execution off and on, in the test session and on a
local-cluster of separate executor JVMs (the Connect client runs the same query:
tests/connect/)."""

from __future__ import annotations

from typing import Any, Dict

import pytest
from pyspark.sql import SparkSession

from apps.partial_states import TWO_LEVELS
from helper_cases import heavy_states_of_few_keys
from plans import Plan


def test_heavy_states_of_four_keys_are_merged_in_two_levels(spark: SparkSession) -> None:
    answer = heavy_states_of_few_keys(spark)
    assert answer[-1] is True, answer
    rows = answer[:-1]
    assert [row[0] for row in rows] == [0, 1, 2, 3], rows
    # Each key's 10,000 rows hold 5,000 values of x, twice each.
    assert all(row[2] == 5000 for row in rows), rows


@pytest.mark.cluster
def test_local_cluster_heavy_states_match_spark(local_cluster: Dict[str, Any]) -> None:
    """tests/apps/partial_states.py's part of the local-cluster run: the four variants give
    Spark's rows, and the states are merged in two levels where skewagg is on with adaptive
    execution (the rule runs when the partial states' shuffle has run)."""
    result = local_cluster["partial_states"]
    rows = result["rows"]
    for name, actual in rows.items():
        assert actual == rows["skewagg=False,adaptive=False"], name
        assert len(actual) == 4, name
    for name, reported in result["plans"].items():
        merged = Plan(**reported).has_decision(TWO_LEVELS)
        assert merged == (name == "skewagg=True,adaptive=True"), (name, result["explained"])
