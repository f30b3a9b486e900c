"""Partial aggregation before a user repartition on the grouping keys, checked off vs on."""


from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from conftest import differential
from plans import USER_REPARTITION


def skewed(spark: SparkSession) -> DataFrame:
    return spark.range(0, 5000).select(
        F.when(F.col("id") % 10 < 3, F.lit(0)).otherwise(F.col("id") % 400).alias("k"),
        (F.col("id") / 3.0).alias("v"),
        (F.col("id") % 7).cast("int").alias("i"),
    )


def test_hinted_repartition_then_group_by_aggregates_before_the_shuffle(
        spark: SparkSession) -> None:
    plans = differential(
        spark,
        lambda s: skewed(s).repartition("k").groupBy("k").agg(
            F.sum("v"), F.count("*"), F.avg("v"), F.countDistinct("i")
        ).hint("skew_agg"),
    )
    for adaptive in (False, True):
        assert not plans[(False, adaptive)].partial_below_exchange(USER_REPARTITION)
        on = plans[(True, adaptive)]
        assert on.partial_below_exchange(USER_REPARTITION), on
        assert on.has_decision("partial aggregate before the user's repartition"), on


def test_hinted_sql_distribute_by_aggregates_before_the_shuffle(spark: SparkSession) -> None:
    skewed(spark).createOrReplaceTempView("skewed_py")
    plans = differential(
        spark,
        lambda s: s.sql(
            "SELECT /*+ SKEW_AGG */ k, sum(v) AS s "
            "FROM (SELECT * FROM skewed_py DISTRIBUTE BY k) GROUP BY k"
        ),
    )
    for adaptive in (False, True):
        on = plans[(True, adaptive)]
        assert on.partial_below_exchange(USER_REPARTITION), on


def test_repartition_on_another_column_is_left_alone(spark: SparkSession) -> None:
    plans = differential(
        spark, lambda s: skewed(s).repartition("i").groupBy("k").agg(F.sum("v")).hint("skew_agg")
    )
    for adaptive in (False, True):
        assert not plans[(True, adaptive)].partial_below_exchange(USER_REPARTITION)


def test_repartition_then_group_by_without_a_hint_aggregates_before_the_shuffle(
    spark: SparkSession,
) -> None:
    plans = differential(
        spark, lambda s: skewed(s).repartition("k").groupBy("k").agg(F.sum("v"), F.avg("v"))
    )
    for adaptive in (False, True):
        assert not plans[(False, adaptive)].partial_below_exchange(USER_REPARTITION)
        on = plans[(True, adaptive)]
        assert on.partial_below_exchange(USER_REPARTITION), on
        assert on.has_decision("flushing partial aggregate before the user's repartition"), on


def test_skewed_repartition_is_split_at_run_time_without_local_aggregation(
    spark: SparkSession,
) -> None:
    settings = {"spark.sql.shuffle.partitions": "32", "spark.skewagg.skew.minPartitionSize": "1k",
                "spark.skewagg.repartition.localAggregate.enabled": "false",
                "spark.skewagg.skew.minSplitSize": "1k",
                "spark.sql.adaptive.coalescePartitions.enabled": "false"}
    saved = {k: spark.conf.get(k, None) for k in settings}
    try:
        for k, v in settings.items():
            spark.conf.set(k, v)
        plans = differential(
            spark, lambda s: skewed(s).repartition("k").groupBy("k").agg(F.sum("v"), F.count("*"))
        )
    finally:
        for k, v in saved.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)
    assert plans[(True, True)].has_decision("skewed repartition read in splits: partition")
    assert not plans[(True, False)].has("SkewAggLocalStageExec")
    assert not plans[(False, True)].partial_below_exchange(USER_REPARTITION)
