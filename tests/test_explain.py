"""skewagg.explain and the skewagg section of Spark's own EXPLAIN, per decision kind."""

# No `from __future__ import annotations`: pandas_udf reads the UDAF's type hints at run time.

from typing import Iterator

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType

import skewagg
from conftest import EXPLAIN_SECTIONS, SPARK_LINE
from test_join_skew_split import dim, fact, small_skew_settings  # noqa: F401 (fixture)

LOCAL_AGGREGATE = "spark.skewagg.join.localAggregate.enabled"


@pytest.fixture
def no_local_aggregate(spark: SparkSession) -> Iterator[None]:
    """Local aggregation before the join would take the skew away first: off here."""
    spark.conf.set(LOCAL_AGGREGATE, "false")
    yield
    spark.conf.unset(LOCAL_AGGREGATE)


@EXPLAIN_SECTIONS
def test_configure_appends_the_explain_provider() -> None:
    builder = SparkSession.Builder().config(skewagg.EXPLAIN_PROVIDERS_KEY, "com.example.Mine")
    options = dict(skewagg.configure(skewagg.configure(builder))._options)
    assert options[skewagg.EXPLAIN_PROVIDERS_KEY] == (
        f"com.example.Mine,{skewagg.EXPLAIN_GENERATOR_CLASS}")


@pytest.mark.usefixtures("small_skew_settings")
def test_local_aggregation_before_the_join_names_itself(spark: SparkSession) -> None:
    spark.conf.set(LOCAL_AGGREGATE, "true")
    try:
        df = fact(spark, skewed=True).join(dim(spark), "k").groupBy("k").agg(F.sum("v"))
        assert "rewritten: flushing partial aggregate before the join" in \
            skewagg.explain_text(df, run=True)
    finally:
        spark.conf.unset(LOCAL_AGGREGATE)


@pytest.mark.usefixtures("small_skew_settings")
def test_a_failed_planning_step_falls_back_and_says_so(spark: SparkSession) -> None:
    # The test-only fault switch makes the join rewrite throw while the query is planned.
    spark.conf.set("spark.skewagg.test.failRule", "LocalAggregateBeforeJoin")
    try:
        df = fact(spark, skewed=True).join(dim(spark), "k").groupBy("k").agg(F.sum("v"))
        text = skewagg.explain_text(df, run=True)
        assert "fallback: LocalAggregateBeforeJoin failed while planning" in text
        assert "before the join" not in text
        # And the query still runs: one row per fact key (every key has a dimension row).
        assert df.count() == fact(spark, skewed=True).select("k").distinct().count()
    finally:
        spark.conf.unset("spark.skewagg.test.failRule")


@pytest.mark.usefixtures("small_skew_settings", "no_local_aggregate")
def test_rewritten_join_after_the_query_ran(
        spark: SparkSession, capsys: pytest.CaptureFixture) -> None:
    df = fact(spark, skewed=True).join(dim(spark), "k").groupBy("k").agg(F.sum("v"))
    before = skewagg.explain_text(df)
    assert "not decided yet" in before and "Run the query" in before
    skewagg.explain(df, run=True)
    out = capsys.readouterr().out
    assert out.startswith("aggregate 1: group by [k] computing [sum(v)]")
    assert "rewritten: skew split of the join below the aggregate: partition" in out
    if SPARK_LINE >= (4, 0):
        # The same text in Spark's own explain (configure() listed the provider).
        df.explain()
        spark_out = capsys.readouterr().out
        assert "== Extended Information (skewagg) ==" in spark_out
        assert "rewritten: skew split of the join below the aggregate" in spark_out


@pytest.mark.usefixtures("small_skew_settings", "no_local_aggregate")
def test_refusals_name_their_reason_and_numbers(spark: SparkSession) -> None:
    uniform = fact(spark, skewed=False).join(dim(spark), "k").groupBy("k").agg(F.sum("v"))
    text = skewagg.explain_text(uniform, run=True)
    assert "not skewed: in the join's input shuffles below, the largest partition" in text
    assert "not more than 5.0x the per-slot share" in text
    assert "on 64 task slots (spark.skewagg.skew.taskSlots)" in text
    hinted = fact(spark, skewed=True).join(dim(spark), "k").groupBy("k").agg(F.sum("v")) \
        .hint("no_skew_agg")
    assert "left alone: hint NO_SKEW_AGG." in skewagg.explain_text(hinted, run=True)
    plain = fact(spark, skewed=True).groupBy("k").agg(F.sum("v"))
    assert "already aggregates each task's rows before the shuffle" in \
        skewagg.explain_text(plain, run=True)


def test_python_udaf_is_left_alone(spark: SparkSession) -> None:
    pytest.importorskip("pyarrow")
    pd = pytest.importorskip("pandas")

    @F.pandas_udf(DoubleType())
    def mean_udf(v: pd.Series) -> float:
        return float(v.mean())

    df = spark.range(10).select((F.col("id") % 3).alias("k"), F.col("id").alias("v")) \
        .groupBy("k").agg(mean_udf("v"))
    # Planning only (no Python worker needed): the decision does not depend on run-time sizes.
    text = skewagg.explain_text(df)
    # Spark 4.0 names the operator AggregateInPandas, 4.1 and newer ArrowAggregatePython.
    assert "(AggregateInPandas)" in text or "(ArrowAggregatePython)" in text
    assert "left alone: a Python UDAF (pandas_udf) cannot be split" in text


def test_a_percentile_query_is_explained_as_one_key_at_a_time(spark: SparkSession) -> None:
    df = (spark.range(0, 2000).select((F.col("id") % 10).alias("k"), F.col("id").alias("v"))
          .groupBy("k").agg(F.percentile("v", 0.5)))
    text = skewagg.explain_text(df, run=True)
    assert "(HotKeySplitAggregate)" in text, text
    assert "rewritten: one key at a time (HotKeySplitAggregate): 2,000 rows read into 10 keys" \
        in text, text
    assert "no aggregate" not in text, text
