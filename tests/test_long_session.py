"""A long session does not accumulate skewagg state in the driver: after many rewritten queries,
with skewagg.explain and skewagg.stage_report used along the way, the listener bus has the same
listeners as after the first queries and none of skewagg's. benchmarks/long_session.py runs the
same loop for thousands of queries and records the driver heap after GC (docs/bad-input.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import long_session  # noqa: E402

pytestmark = pytest.mark.slow


def test_many_rewritten_queries_leave_no_skewagg_listeners_behind(spark: SparkSession) -> None:
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try:
        samples = long_session.run(spark, queries=160, every=40)
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
    assert [s["queries"] for s in samples] == [40, 80, 120, 160]
    # stage_report attaches a listener for one action and removes it: none is left behind.
    assert all(s["skewagg_listeners"] == 0 for s in samples), samples
    assert len({s["listeners"] for s in samples}) == 1, samples
