"""Partial aggregation before a user repartition on the grouping keys, checked off vs on."""

import re

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from conftest import differential

# An exchange the user asked for, directly above a partial aggregate.
PARTIAL_BELOW_USER_EXCHANGE = re.compile(
    r"Exchange hashpartitioning\([^\n]*REPARTITION_BY_(COL|NUM)[^\n]*\n[ +\-:|*()0-9]*"
    r"(Hash|ObjectHash|Sort)Aggregate\(keys=[^\n]*functions=\[partial_"
)


def skewed(spark: SparkSession) -> DataFrame:
    return spark.range(0, 5000).select(
        F.when(F.col("id") % 10 < 3, F.lit(0)).otherwise(F.col("id") % 400).alias("k"),
        (F.col("id") / 3.0).alias("v"),
        (F.col("id") % 7).cast("int").alias("i"),
    )


def test_repartition_then_group_by_is_rewritten(spark: SparkSession) -> None:
    plans = differential(
        spark,
        lambda s: skewed(s).repartition("k").groupBy("k").agg(
            F.sum("v"), F.count("*"), F.avg("v"), F.countDistinct("i")
        ),
    )
    for adaptive in (False, True):
        assert not PARTIAL_BELOW_USER_EXCHANGE.search(plans[(False, adaptive)])
        assert PARTIAL_BELOW_USER_EXCHANGE.search(plans[(True, adaptive)]), plans[(True, adaptive)]


def test_sql_distribute_by_is_rewritten(spark: SparkSession) -> None:
    skewed(spark).createOrReplaceTempView("skewed_py")
    plans = differential(
        spark,
        lambda s: s.sql(
            "SELECT k, sum(v) AS s FROM (SELECT * FROM skewed_py DISTRIBUTE BY k) GROUP BY k"
        ),
    )
    for adaptive in (False, True):
        assert PARTIAL_BELOW_USER_EXCHANGE.search(plans[(True, adaptive)]), plans[(True, adaptive)]


def test_repartition_on_another_column_is_left_alone(spark: SparkSession) -> None:
    plans = differential(
        spark, lambda s: skewed(s).repartition("i").groupBy("k").agg(F.sum("v"))
    )
    for adaptive in (False, True):
        assert not PARTIAL_BELOW_USER_EXCHANGE.search(plans[(True, adaptive)])
