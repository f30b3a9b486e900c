"""Holistic aggregates one key at a time (SingleKeyAggregate): exact percentiles with skewagg off
and on, in the test session and on a local-cluster of separate executor JVMs."""

from __future__ import annotations

from typing import Any, Dict

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from conftest import SPARK_LINE, differential
from plans import SINGLE_KEY_AGGREGATES, Plan


def _skewed(spark: SparkSession) -> DataFrame:
    return spark.range(0, 5000).select(
        F.when(F.col("id") % 10 < 3, F.lit(0)).otherwise(F.col("id") % 31).alias("k"),
        F.when(F.col("id") % 53 == 1, F.lit(None)).otherwise(F.col("id") % 17 / 3.0).alias("v"),
    )


def test_percentile_median_and_mode_one_key_at_a_time(spark: SparkSession) -> None:
    # (mode() WITHIN GROUP, whose ties have an order, is Spark 4.0+.)
    modes = [F.expr("mode() WITHIN GROUP (ORDER BY v)").alias("mode")] if SPARK_LINE >= (4, 0) \
        else []
    plans = differential(spark, lambda s: _skewed(s).groupBy("k").agg(
        F.percentile("v", [0.1, 0.5, 0.9]).alias("p"),
        F.median("v").alias("m"),
        *modes,
        F.count("*").alias("n"),
    ))
    for adaptive in (False, True):
        assert plans[(True, adaptive)].has(*SINGLE_KEY_AGGREGATES), plans[(True, adaptive)]
        assert not plans[(False, adaptive)].has(*SINGLE_KEY_AGGREGATES)


@pytest.fixture(scope="module")
def cluster_percentiles(local_cluster: Dict[str, Any]) -> Dict[str, Any]:
    """tests/apps/single_key_percentile.py's part of the local-cluster run, for both settings;
    fails unless every variant (skewagg off/on x adaptive off/on) of each settings returns
    Spark's rows."""
    result: Dict[str, Any] = local_cluster["percentiles"]
    for settings in ("default", "split"):
        rows = result[settings]["rows"]
        expected = rows["skewagg=False,adaptive=False"]
        assert len(expected) == 97
        for name, actual in rows.items():
            assert actual == expected, (settings, name)
    return result


@pytest.mark.cluster
def test_local_cluster_percentiles_match_spark(cluster_percentiles: Dict[str, Any]) -> None:
    for name, reported in cluster_percentiles["default"]["plans"].items():
        plan = Plan(**reported)
        assert plan.has(*SINGLE_KEY_AGGREGATES) == name.startswith("skewagg=True"), (name, plan)


@pytest.mark.cluster
def test_local_cluster_split_hot_key_percentiles_match_spark(
        cluster_percentiles: Dict[str, Any]) -> None:
    """The same app with hot keys split by value (key 0 holds 30% of 30000 rows): spread over
    tasks on two executor JVMs, still Spark's rows. Planned for 64 task slots: on the cluster's
    2, key 0 is shorter than an even share of the work and is not split."""
    for name, splits in cluster_percentiles["split"]["splits"].items():
        if name.startswith("skewagg=True"):
            assert splits["hotKeys"] == 1 and splits["splits"] >= 2, (name, splits)
        else:
            assert splits == {}, (name, splits)
