"""skewagg.analyze: numbers checked against a small dataset computed by hand."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import skewagg
from skewagg.advisor.skew_rule import parse_bytes
from skewagg.skew_report import gini

# k: a x6, b x2, c x1, d x1 (10 rows). Ascending counts 1,1,2,6: Gini = 1 - (1+3+6+14)/(4*10)
# = 0.4; the mean-absolute-difference definition gives the same: 32 / (2 * 4^2 * 2.5) = 0.4.
KEYS = ["a"] * 6 + ["b"] * 2 + ["c", "d"]


@pytest.fixture()
def small(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame(
        [(k, i, i % 2) for i, k in enumerate(KEYS)], "k string, v long, w int")


def spark_partition_rows(df: DataFrame, n: int, *keys: str) -> list:
    """Rows per partition as Spark's own hash repartitioning places them."""
    placed = df.repartition(n, *keys).select(F.spark_partition_id().alias("p")).collect()
    counts = Counter(r["p"] for r in placed)
    return [counts.get(i, 0) for i in range(n)]


def test_counts_shares_and_concentration(small: DataFrame) -> None:
    report = skewagg.analyze(small, ["k"], top=3, num_partitions=4)
    assert report.rows == 10 and report.distinct_keys == 4
    assert [(h.key, h.rows) for h in report.heavy_keys] == [(("a",), 6), (("b",), 2), (("c",), 1)]
    assert report.heavy_keys[0].share == pytest.approx(0.6)
    assert report.top_share(1) == pytest.approx(0.6)
    assert report.top_share(10) == pytest.approx(1.0)
    assert report.top_share(2) == pytest.approx(0.8)
    assert report.gini == pytest.approx(0.4)
    assert sorted(report.key_frequencies) == [(1, 2), (2, 1), (6, 1)]


def test_gini_of_even_and_concentrated_keys() -> None:
    assert gini([(5, 10)]) == pytest.approx(0.0)
    assert gini([(1, 4), (6, 1)]) == pytest.approx(0.4)  # 1,1,1,1,6: sum|xi-xj| = 40; 40/(2*25*2)
    assert gini([]) == 0.0


def test_partitions_are_where_spark_hash_partitioning_puts_the_rows(small: DataFrame) -> None:
    for n, keys in ((4, ["k"]), (3, ["k", "w"]), (7, ["w", "k"])):
        report = skewagg.analyze(small, keys, num_partitions=n)
        assert report.partition_rows == spark_partition_rows(small, n, *keys), keys
    report = skewagg.analyze(small, ["k"], num_partitions=4)
    pid, rows = report.largest_partition
    assert rows >= 6 and report.partition_rows[pid] == rows
    assert report.median_partition_rows == sorted(report.partition_rows)[2]


def test_row_size_estimate_and_the_skew_verdict(spark: SparkSession, small: DataFrame) -> None:
    # (k string, v long, w int): 8-byte null bitmap + 3 x 8-byte fields + 'a' padded to 8 = 40.
    report = skewagg.analyze(small, "k", num_partitions=4)
    assert report.row_bytes == pytest.approx(40.0)
    assert report.partition_bytes == [40 * r for r in report.partition_rows]
    # Default floor (16MB): far below it, not skewed.
    assert report.decision.startswith("not skewed: largest partition")
    assert "below the 16.0 MiB floor (spark.skewagg.skew.minPartitionSize)" in report.decision
    saved = {k: spark.conf.get(k, None) for k in
             ("spark.skewagg.skew.minPartitionSize", "spark.skewagg.skew.factor")}
    try:
        spark.conf.set("spark.skewagg.skew.minPartitionSize", "100b")
        spark.conf.set("spark.skewagg.skew.factor", "1.0")
        report = skewagg.analyze(small, "k", num_partitions=4)
        median = sorted(report.partition_bytes)[2]
        expected = sorted(((i, b) for i, b in enumerate(report.partition_bytes)
                           if b > max(100, median)), key=lambda x: -x[1])
        assert report.verdict.skewed_partitions == expected
        assert expected and expected[0][1] >= 240  # a's six rows
        assert report.decision.startswith(f"skewed: partition {expected[0][0]} is about")
    finally:
        for k, v in saved.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)


def test_renders_as_text_html_pandas_and_plots(small: DataFrame, tmp_path: Path) -> None:
    report = skewagg.analyze(small, ["k"], top=2, num_partitions=4)
    text = str(report)
    assert "rows                  10" in text and "distinct keys         4 (exact)" in text
    assert "top-1 key share       60.0%" in text and "Gini of rows per key  0.400" in text
    assert re.search(r"\n +1 +6 +60\.0% +a\n", text)
    assert "hash partitions       4 (num_partitions)" in text
    html = report._repr_html_()
    assert html.count("<tr>") >= 12 and "<td>60.0%</td>" in html
    pdf = report.to_pandas()
    assert list(pdf.columns) == ["k", "rows", "share"] and pdf.iloc[0].tolist() == ["a", 6, 0.6]
    assert report.partitions_to_pandas()["rows"].sum() == 10
    fig = report.plot(str(tmp_path / "skew.png"))
    assert len(fig.axes) == 2 and (tmp_path / "skew.png").stat().st_size > 1000


def test_bad_column_and_empty_dataframe(small: DataFrame) -> None:
    with pytest.raises(skewagg.ColumnNotFoundError,
                       match=r"'kk' is not a column.*Available columns: k, v, w"):
        skewagg.analyze(small, ["kk"])
    with pytest.raises(skewagg.ColumnNotFoundError, match="at least one key"):
        skewagg.analyze(small, [])
    assert skewagg.analyze(small, ["K"]).keys == ["k"]  # Spark resolves names case-insensitively
    empty = skewagg.analyze(small.limit(0), ["k"])
    assert empty.empty and empty.rows == 0 and empty.heavy_keys == []
    assert "no rows" in str(empty) and "no rows" in empty._repr_html_()


def test_parse_bytes_reads_spark_size_strings() -> None:
    assert parse_bytes("16MB") == 16 << 20 and parse_bytes("1k") == 1024
    assert parse_bytes("1048576") == 1048576 and parse_bytes("100b") == 100
    with pytest.raises(skewagg.SkewAggError, match="not a size"):
        parse_bytes("lots")


def test_the_python_skew_test_is_the_rules_own(spark: SparkSession) -> None:
    """analyze uses the rules' skew test when skewagg is loaded; its Python copy, for sessions
    without skewagg, gives the same verdict, and its defaults are the config object's."""
    from skewagg._bridge import bridge
    from skewagg.advisor.skew_rule import (
        DEFAULT_SKEW_FACTOR,
        DEFAULT_SKEW_FLOOR,
        DEFAULT_SPLIT_SIZE,
        DEFAULT_TASK_SLOTS,
        SKEW_FACTOR_KEY,
        SKEW_FLOOR_KEY,
        SPLIT_SIZE_KEY,
        TASK_SLOTS_KEY,
    )
    from skewagg.skew_report import python_skew_verdict, skew_verdict

    jvm = bridge(spark)
    assert parse_bytes(str(jvm.defaultOf(SKEW_FLOOR_KEY))) == parse_bytes(DEFAULT_SKEW_FLOOR)
    assert parse_bytes(str(jvm.defaultOf(SPLIT_SIZE_KEY))) == parse_bytes(DEFAULT_SPLIT_SIZE)
    assert float(str(jvm.defaultOf(SKEW_FACTOR_KEY))) == float(DEFAULT_SKEW_FACTOR)
    assert int(str(jvm.defaultOf(TASK_SLOTS_KEY))) == int(DEFAULT_TASK_SLOTS)
    samples = [[], [0], [5, 5, 5, 5], [1, 2, 3, 400, 5], [10, 10, 900, 10, 800, 10],
               [3 << 30, 1, 1, 1], list(range(0, 2000, 7))]
    saved = {k: spark.conf.get(k, None) for k in (SKEW_FLOOR_KEY, SKEW_FACTOR_KEY, TASK_SLOTS_KEY)}
    try:
        for floor, factor, slots in (("0b", "1.0", "64"), ("100b", "2.5", "2"), ("0b", "2.5", "0"),
                                     (None, None, None)):
            for key, value in ((SKEW_FLOOR_KEY, floor), (SKEW_FACTOR_KEY, factor),
                               (TASK_SLOTS_KEY, slots)):
                spark.conf.unset(key) if value is None else spark.conf.set(key, value)
            for sizes in samples:
                assert skew_verdict(spark, sizes) == python_skew_verdict(spark, sizes), sizes
    finally:
        for k, v in saved.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)
