"""Windows over a hot key split by order ranges (HotKeySplitWindowExec): Spark's rows with skewagg
off and on, in the test session and on a local-cluster of separate executor JVMs."""

from __future__ import annotations

from typing import Any, Dict, Iterator

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

import skewagg
from apps.window_split import SPLIT_CONF
from conftest import differential, session_settings


@pytest.fixture
def split_conf(spark: SparkSession) -> Iterator[None]:
    with session_settings(spark, SPLIT_CONF):
        yield


def _skewed(spark: SparkSession) -> DataFrame:
    """(k, o, i, v): key 0 holds 30% of 30,000 rows in 8 partitions; o unique, i with ties."""
    return spark.range(0, 30000, 1, 8).select(
        F.when(F.col("id") % 10 < 3, F.lit(0))
        .otherwise((F.col("id") * 7919) % 1000 + 1).alias("k"),
        ((F.col("id") * 7919) % 30000).alias("o"),
        (F.col("id") % 13).alias("i"),
        ((F.col("id") * 31) % 1000 - 400).alias("v"),
    )


@pytest.mark.usefixtures("split_conf")
def test_running_sums_and_ranks_split_with_sparks_rows(spark: SparkSession) -> None:
    by_i = Window.partitionBy("k").orderBy(F.col("i").desc())
    plans = differential(spark, lambda s: _skewed(s).select(
        "k", "o",
        F.sum("v").over(by_i).alias("running"),
        F.dense_rank().over(by_i).alias("dr"),
        F.rank().over(by_i).alias("r"),
    ))
    for adaptive in (True, False):
        assert plans[(True, adaptive)].has("HotKeySplitWindowExec"), plans[(True, adaptive)]
        assert not plans[(False, adaptive)].has("HotKeySplitWindowExec"), plans[(False, adaptive)]


@pytest.mark.usefixtures("split_conf")
def test_chain_of_windows_on_the_same_key_split_with_sparks_rows(spark: SparkSession) -> None:
    """Windows on k with two orders read one shuffle: both are split, none left to Spark."""
    by_i = Window.partitionBy("k").orderBy(F.col("i").desc())
    by_o = Window.partitionBy("k").orderBy("o")
    plans = differential(spark, lambda s: _skewed(s).select(
        "k", "o",
        F.row_number().over(by_o).alias("rn"),
        F.lag("v").over(by_o).alias("prev"),
        F.sum("v").over(by_i).alias("running"),
        F.dense_rank().over(by_i).alias("dr"),
    ))
    for adaptive in (True, False):
        plan = plans[(True, adaptive)]
        assert plan.has("HotKeySplitWindowExec") and not plan.has("WindowExec"), plan
        assert "then by the next window's order" in plan.decisions("HotKeySplitWindowExec")[0]


@pytest.mark.usefixtures("split_conf")
def test_row_number_split_and_explained(spark: SparkSession) -> None:
    plans = differential(spark, lambda s: _skewed(s).select(
        "k", "o", F.row_number().over(Window.partitionBy("k").orderBy("o")).alias("rn")))
    for adaptive in (True, False):
        assert plans[(True, adaptive)].has("HotKeySplitWindowExec"), plans[(True, adaptive)]
    df = _skewed(spark).select(
        "k", F.row_number().over(Window.partitionBy("k").orderBy("o")).alias("rn"))
    text = skewagg.explain_text(df, run=True)
    assert "window 1: PARTITION BY k: rn" in text and "hot key split by order" in text, text


@pytest.mark.usefixtures("split_conf")
def test_hints_on_windows(spark: SparkSession) -> None:
    """NO_SKEW_AGG leaves a skewed window to Spark; SKEW_AGG splits a hot key no partition-size
    test calls skewed."""
    by_o = Window.partitionBy("k").orderBy("o")
    windowed = _skewed(spark).select("k", "o", F.lag("v", 2).over(by_o).alias("l"))
    text = skewagg.explain_text(windowed.hint("no_skew_agg"), run=True)
    assert "left alone: hint NO_SKEW_AGG." in text, text
    with session_settings(spark, {"spark.skewagg.skew.factor": "1000"}):
        plans = differential(spark, lambda s: _skewed(s).select(
            "k", "o", F.lag("v", 2).over(by_o).alias("l")).hint("skew_agg"))
        assert plans[(True, True)].has("HotKeySplitWindowExec"), plans[(True, True)]
        assert "not skewed" in skewagg.explain_text(windowed, run=True)


def _events(spark: SparkSession) -> DataFrame:
    """(ts, g, v): 30,000 events in 8 partitions, ts unique, in the order the rows were written
    (each partition a run of times, as files of an event log are), g one of 4 groups."""
    return spark.range(0, 30000, 1, 8).select(
        F.col("id").alias("ts"),
        (F.col("id") % 4).alias("g"),
        F.when(F.col("id") % 17 == 0, F.lit(None)).otherwise((F.col("id") * 31) % 1000 - 400)
        .alias("v"),
    )


@pytest.mark.usefixtures("split_conf")
def test_window_without_partition_by_split_by_order_with_sparks_rows(spark: SparkSession) -> None:
    """Window.orderBy alone: Spark's one task for the whole table; skewagg splits it by ranges of
    ts (sampled from every map output, so the ranges follow the files' runs of times)."""
    by_ts = Window.orderBy("ts")
    running = by_ts.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    plans = differential(spark, lambda s: _events(s).select(
        "ts", "g",
        F.row_number().over(by_ts).alias("rn"),
        F.sum("v").over(running).alias("running"),
        F.lag("v").over(by_ts).alias("prev"),
        F.lead("v", 2).over(by_ts).alias("next2"),
        F.ntile(10).over(by_ts).alias("decile"),
        F.percent_rank().over(by_ts).alias("pr"),
    ))
    for adaptive in (True, False):
        plan = plans[(True, adaptive)]
        assert plan.has("HotKeySplitWindowExec") and not plan.has("WindowExec"), plan
        decision = plan.decisions("HotKeySplitWindowExec")[0]
        assert decision.startswith("no PARTITION BY: Spark runs the window in one task"), decision
        assert "the whole partition split by order into" in decision, decision
        assert not plans[(False, adaptive)].has("HotKeySplitWindowExec")
    df = _events(spark).select("ts", F.row_number().over(by_ts).alias("rn"))
    text = skewagg.explain_text(df, run=True)
    assert "no PARTITION BY: Spark runs the window in one task" in text, text
    assert "not skewed" not in text, text


@pytest.mark.usefixtures("split_conf")
def test_moving_averages_over_the_last_rows_split_with_sparks_rows(spark: SparkSession) -> None:
    """Window.orderBy("ts").rowsBetween(-6, 0): each range reads the rows its frames reach in the
    ranges beside it (a halo), so a moving average is Spark's to the last bit, doubles too."""
    by_ts = Window.orderBy("ts")
    plans = differential(spark, lambda s: _events(s).select(
        "ts",
        F.avg("v").over(by_ts.rowsBetween(-6, 0)).alias("avg7"),
        F.avg(F.col("v") / 7.0).over(by_ts.rowsBetween(-3, 3)).alias("centred"),
        F.max("v").over(by_ts.rowsBetween(1, 100)).alias("ahead"),
    ))
    for adaptive in (True, False):
        plan = plans[(True, adaptive)]
        assert plan.has("HotKeySplitWindowExec") and not plan.has("WindowExec"), plan


@pytest.mark.usefixtures("split_conf")
def test_moving_sums_over_a_range_of_times_split_with_sparks_rows(spark: SparkSession) -> None:
    """rangeBetween over the order's values, and RANGE ... INTERVAL over a timestamp beside a
    lead IGNORE NULLS: each range reads the rows of the ranges beside it that its frames reach."""
    by_ts = Window.orderBy("ts")
    numeric = differential(spark, lambda s: _events(s).select(
        "ts",
        F.sum("v").over(by_ts.rangeBetween(-50, 0)).alias("last50"),
        F.count("v").over(by_ts.rangeBetween(-5, 20)).alias("around"),
    ))

    def last_hour(s: SparkSession) -> DataFrame:
        _events(s).withColumn("at", F.timestamp_seconds(F.col("ts") * 60)) \
            .createOrReplaceTempView("events")
        return s.sql("SELECT ts, sum(v) OVER (ORDER BY at RANGE BETWEEN INTERVAL 1 HOUR "
                     "PRECEDING AND CURRENT ROW) AS last_hour, lead(v, 2) IGNORE NULLS OVER "
                     "(ORDER BY at) AS next_values FROM events")

    timed = differential(spark, last_hour)
    for plans in (numeric, timed):
        for adaptive in (True, False):
            plan = plans[(True, adaptive)]
            assert plan.has("HotKeySplitWindowExec") and not plan.has("WindowExec"), plan


@pytest.mark.usefixtures("split_conf")
def test_fewer_keys_than_partitions_split_by_the_per_slot_share(spark: SparkSession) -> None:
    """4 keys in as many shuffle partitions: every partition is as large as the median, but each
    holds a quarter of the stage, far above an even share on 64 slots: all 4 keys split."""
    by_ts = Window.partitionBy("g").orderBy("ts")
    with session_settings(spark, {"spark.sql.shuffle.partitions": "4"}):
        plans = differential(spark, lambda s: _events(s).select(
            "ts", "g", F.row_number().over(by_ts).alias("rn"),
            F.sum("v").over(by_ts).alias("running")))
    for adaptive in (True, False):
        plan = plans[(True, adaptive)]
        assert plan.has("HotKeySplitWindowExec") and not plan.has("WindowExec"), plan
        assert "4 hot keys split by order" in plan.decisions("HotKeySplitWindowExec")[0]


@pytest.mark.cluster
def test_local_cluster_windows_match_spark(local_cluster: Dict[str, Any]) -> None:
    """tests/apps/window_split.py's part of the local-cluster run: every query's four variants
    give Spark's rows, and the hot key is split whenever skewagg is on (with adaptive execution
    on or off)."""
    result = local_cluster["windows"]
    rows = result["rows"]
    for name, actual in rows.items():
        query = name.split(":")[0]
        assert actual == rows[f"{query}:skewagg=False,adaptive=False"], name
        assert len(actual) == 30000, name
    for name, splits in result["splits"].items():
        if "skewagg=True" in name:
            assert splits.get("hotKeys") == 1 and splits["splits"] >= 2, (name, splits)
        else:
            assert splits == {}, (name, splits)
