"""SKEW_AGG / NO_SKEW_AGG hints from SQL and DataFrames."""

import sys
from typing import Callable, Dict, List, Tuple

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from conftest import SPARK_LINE, differential
from plans import Plan
from subprocesses import APPS, report, run


def fact(spark: SparkSession) -> DataFrame:
    return spark.range(0, 6000).select(
        F.when(F.col("id") % 10 < 3, F.lit(0)).otherwise(F.col("id") % 300).alias("k"),
        (F.col("id") / 3.0).alias("v"),
    )


def dim(spark: SparkSession) -> DataFrame:
    # Keys below 100 appear twice: each fact row joins twice, so sums double.
    base = spark.range(0, 300).select(F.col("id").alias("k"), (F.col("id") % 7).alias("attr"))
    return base.union(base.where(F.col("k") < 100))


@pytest.fixture
def no_broadcast(spark: SparkSession):
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    yield
    spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")


@pytest.mark.usefixtures("no_broadcast")
def test_dataframe_hint_aggregates_before_the_join(spark: SparkSession) -> None:
    plans = differential(
        spark,
        lambda s: fact(s).join(dim(s), "k").groupBy("k", "attr")
        .agg(F.sum("v").alias("s"), F.count("*").alias("n")).hint("skew_agg"),
    )
    for adaptive in (False, True):
        assert plans[(True, adaptive)].partial_below_join(), plans[(True, adaptive)]
        assert not plans[(False, adaptive)].partial_below_join()


@pytest.mark.usefixtures("no_broadcast")
def test_sql_hint_aggregates_before_the_join(spark: SparkSession) -> None:
    fact(spark).createOrReplaceTempView("hint_fact")
    dim(spark).createOrReplaceTempView("hint_dim")
    plans = differential(
        spark,
        lambda s: s.sql(
            "SELECT /*+ SKEW_AGG(k) */ f.k, sum(f.v) AS s FROM hint_fact f "
            "JOIN hint_dim d ON f.k = d.k GROUP BY f.k"
        ),
    )
    assert plans[(True, True)].partial_below_join(), plans[(True, True)]


def test_hint_naming_a_missing_column_is_an_analysis_error(spark: SparkSession) -> None:
    with pytest.raises(AnalysisException, match="SKEW_AGG hint names column `nope`"):
        fact(spark).groupBy("k").agg(F.sum("v")).hint("skew_agg", "nope").collect()


def test_hint_without_an_aggregate_is_an_analysis_error(spark: SparkSession) -> None:
    with pytest.raises(AnalysisException, match="must be placed on an aggregate"):
        fact(spark).hint("skew_agg").collect()


@pytest.mark.usefixtures("no_broadcast")
def test_hint_columns_may_be_qualified_and_may_name_both_join_sides(spark: SparkSession) -> None:
    fact(spark).createOrReplaceTempView("hint_fact")
    dim(spark).createOrReplaceTempView("hint_dim")
    query = ("SELECT /*+ SKEW_AGG({}) */ f.k, sum(f.v) AS s FROM hint_fact f "
             "JOIN hint_dim d ON f.k = d.k GROUP BY f.k")
    # `k` is a column of both sides (accepted: the hint's columns say which are skewed);
    # `f.k` one of them; `x.k` is none.
    for column in ("k", "f.k"):
        plans = differential(spark, lambda s: s.sql(query.format(column)))
        assert plans[(True, True)].partial_below_join(), plans[(True, True)]
    with pytest.raises(AnalysisException, match="SKEW_AGG hint names column `x.k`, which is not"):
        spark.sql(query.format("x.k")).collect()


def test_no_skew_agg_with_parameters_is_an_analysis_error(spark: SparkSession) -> None:
    fact(spark).createOrReplaceTempView("hint_fact")
    with pytest.raises(AnalysisException, match="NO_SKEW_AGG hint takes no parameters"):
        spark.sql("SELECT /*+ NO_SKEW_AGG(k) */ k, sum(v) FROM hint_fact GROUP BY k").collect()


def test_hint_parameter_that_is_no_column_name_is_an_analysis_error(spark: SparkSession) -> None:
    # (pyspark 3.5's hint() takes no Column; a number is no column name either.)
    parameter = F.col("k") + 1 if SPARK_LINE >= (4, 0) else 1.5
    with pytest.raises(AnalysisException, match="SKEW_AGG hint parameters must be column names"):
        fact(spark).groupBy("k").agg(F.sum("v")).hint("skew_agg", parameter).collect()


@pytest.mark.usefixtures("no_broadcast")
def test_misspelt_hint_is_ignored_as_spark_ignores_unknown_hints(spark: SparkSession) -> None:
    fact(spark).createOrReplaceTempView("hint_fact")
    dim(spark).createOrReplaceTempView("hint_dim")

    def joined(hint: str) -> Callable[[SparkSession], DataFrame]:
        return lambda s: s.sql(f"SELECT {hint} f.k, sum(f.v) AS s FROM hint_fact f "
                               "JOIN hint_dim d ON f.k = d.k GROUP BY f.k")

    # Dropped: the plans of the query without a hint, where the hint spelt right changes them.
    misspelt = differential(spark, joined("/*+ SKEW_AGGG(k) */"))
    unhinted = differential(spark, joined(""))
    hinted = differential(spark, joined("/*+ SKEW_AGG(k) */"))
    def names(plans: Dict[Tuple[bool, bool], Plan]) -> List[str]:
        return [o.name for o in plans[(True, False)].operators]

    assert names(misspelt) == names(unhinted)
    assert names(hinted) != names(unhinted), (names(hinted), names(unhinted))
    # And Spark says so in the driver's log.
    proc = run([sys.executable, str(APPS / "bad_settings.py"), "spark.skewagg.enabled=true",
                "SELECT /*+ SKEW_AGGG(k) */ k, count(*) FROM (SELECT id % 7 AS k FROM "
                "range(100)) GROUP BY k"])
    assert report(proc) == {"error": None, "count": 7}
    assert "Unrecognized hint: SKEW_AGGG(k" in proc.stderr, proc.stderr[-3000:]


def test_hint_on_an_aggregate_without_grouping_keys(spark: SparkSession) -> None:
    # DataFrame: the hint sits on an aggregate without keys, which no rule rewrites (a no-op).
    plans = differential(spark, lambda s: fact(s).agg(F.sum("v").alias("s"), F.count("*"))
                         .hint("skew_agg"))
    for adaptive in (False, True):
        assert not plans[(True, adaptive)].has_prefix("SkewAgg"), plans[(True, adaptive)]
    fact(spark).createOrReplaceTempView("hint_fact")
    sql = "SELECT /*+ SKEW_AGG */ sum(v) AS s FROM hint_fact"
    if SPARK_LINE < (4, 0):
        # Spark 3.5 resolves the hint after SELECT sum(...) became an aggregate: a no-op there,
        # as a DataFrame's.
        plans = differential(spark, lambda s: s.sql(sql))
        assert not plans[(True, True)].has_prefix("SkewAgg"), plans[(True, True)]
        return
    # SQL: hints resolve before SELECT sum(...) becomes an aggregate, so there is none below it.
    with pytest.raises(AnalysisException, match="an aggregate without GROUP BY has one group"):
        spark.sql(sql).collect()
