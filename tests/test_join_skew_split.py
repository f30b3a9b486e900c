"""An aggregate above a skewed join: the aggregated side aggregated locally before the join, or,
where that cannot apply, the join split at run time and the partials exchanged (AQE)."""

from typing import Iterator

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import skewagg
from conftest import differential, session_settings

SETTINGS = {
    "spark.sql.shuffle.partitions": "32",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.skewagg.skew.minSplitSize": "2k",
    "spark.sql.adaptive.coalescePartitions.enabled": "false",
    "spark.skewagg.skew.minPartitionSize": "4k",
}


@pytest.fixture
def small_skew_settings(spark: SparkSession) -> Iterator[None]:
    with session_settings(spark, SETTINGS):
        yield


def fact(spark: SparkSession, skewed: bool) -> DataFrame:
    uniform = (F.col("id") * 7919) % 1000
    key = F.when(F.col("id") % 10 < 3, F.lit(0)).otherwise(uniform) if skewed else uniform
    return spark.range(0, 20000).select(key.alias("k"), (F.col("id") / 7.0).alias("v"))


def dim(spark: SparkSession) -> DataFrame:
    return spark.range(0, 1000).select(F.col("id").alias("k"), (F.col("id") % 10).alias("attr"))


def test_configure_installed_the_cost_model(spark: SparkSession) -> None:
    assert spark.conf.get(skewagg.COST_EVALUATOR_KEY) == skewagg.COST_EVALUATOR_CLASS


@pytest.mark.usefixtures("small_skew_settings")
def test_skewed_join_then_group_by_aggregates_locally_before_the_join(spark: SparkSession) -> None:
    plans = differential(
        spark, lambda s: fact(s, True).join(dim(s), "k").groupBy("k").agg(F.sum("v"), F.count("*"))
    )
    for adaptive in (False, True):
        # Adaptive execution appends whether it merged the rows after the join's shuffle.
        on = plans[(True, adaptive)]
        assert on.has_decision("flushing partial aggregate before the join"), on
        assert on.has("FlushingPartialAggregateExec"), on
        assert not plans[(False, adaptive)].has("FlushingPartialAggregateExec")


@pytest.mark.usefixtures("small_skew_settings")
def test_skewed_join_then_group_by_reading_both_sides_is_split(spark: SparkSession) -> None:
    plans = differential(
        spark,
        lambda s: fact(s, True).join(dim(s), "k").groupBy("k")
        .agg(F.sum(F.col("v") * F.col("attr")), F.count("*")),
    )
    on = plans[(True, True)]
    assert any(j.skewJoin for j in on.named("SortMergeJoinExec")), on
    assert on.has_decision("skew split of the join below the aggregate: partition"), on
    assert not plans[(False, True)].skew_join()
    assert not plans[(True, False)].skew_join()


@pytest.mark.usefixtures("small_skew_settings")
def test_uniform_join_then_group_by_is_not_split(spark: SparkSession) -> None:
    plans = differential(
        spark, lambda s: fact(s, False).join(dim(s), "k").groupBy("k").agg(F.sum("v"))
    )
    assert not plans[(True, True)].skew_join()


@pytest.mark.usefixtures("small_skew_settings")
def test_more_than_2000_shuffle_partitions_still_show_the_hot_key(spark: SparkSession) -> None:
    """Above 2000 partitions Spark averages each map task's block sizes unless
    spark.shuffle.accurateBlockSkewedFactor is set, which skewagg.configure() does."""
    assert spark.sparkContext.getConf().get(skewagg.BLOCK_SKEW_FACTOR_KEY) == "5.0"
    many = {
        "spark.sql.shuffle.partitions": "2001",
        "spark.sql.adaptive.coalescePartitions.enabled": "true",
    }
    with session_settings(spark, many):
        plans = differential(
            spark,
            lambda s: fact(s, True).join(dim(s), "k").groupBy("k")
            .agg(F.sum(F.col("v") * F.col("attr")), F.count("*")),
        )
    on = plans[(True, True)]
    assert on.has_decision("skew split of the join below the aggregate: partition"), on
