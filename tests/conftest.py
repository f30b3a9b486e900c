"""Shared fixtures. The Spark session is created once, with skewagg, before any other session:
spark.jars and spark.sql.extensions are read only when the first SparkContext starts."""

from __future__ import annotations

import os
from contextlib import contextmanager

from typing import Callable, Dict, Iterator, List, Tuple

import pytest
from chispa import assert_approx_df_equality
import pyspark
from pyspark import SparkContext
from pyspark.sql import DataFrame, SparkSession

import skewagg
from plans import Plan

os.environ.setdefault("MPLBACKEND", "Agg")  # plots render headless

SPARK_LINE: Tuple[int, ...] = tuple(int(p) for p in pyspark.__version__.split(".")[:2])
"""The installed pyspark's line, for tests of what differs between lines."""

EXPLAIN_SECTIONS = pytest.mark.skipif(
    SPARK_LINE < (4, 0), reason="Spark's EXPLAIN has extended explain providers from 4.0")



@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    assert SparkContext._active_spark_context is None, (
        "a SparkContext was started before the skewagg session fixture; it must be the first"
    )
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("skewagg-tests")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.ui.enabled", "false")
        # Splits planned for 64 task slots: on local[2]'s two no hot partition outlasts an even
        # share of its stage, so nothing would be split (spark.skewagg.skew.taskSlots).
        .config("spark.skewagg.skew.taskSlots", "64")
    )
    session = skewagg.configure(builder).getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@contextmanager
def session_settings(spark: SparkSession, settings: Dict[str, str]) -> Iterator[None]:
    """``settings`` set on ``spark`` for the block, then put back as they were."""
    saved = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)


def differential(
    spark: SparkSession, query: Callable[[SparkSession], DataFrame]
) -> Dict[Tuple[bool, bool], Plan]:
    """Runs ``query`` with skewagg off and on, adaptive execution off and on; asserts (chispa)
    that all four give the same rows; returns the executed plans keyed by (skewagg, adaptive)."""
    plans: Dict[Tuple[bool, bool], Plan] = {}
    results: List[DataFrame] = []
    saved = spark.conf.get("spark.sql.adaptive.enabled")
    try:
        for adaptive in (False, True):
            spark.conf.set("spark.sql.adaptive.enabled", str(adaptive).lower())
            for on in (False, True):
                (skewagg.enable if on else skewagg.disable)(spark)
                df = query(spark)
                rows = df.collect()
                plans[(on, adaptive)] = Plan.of(df)
                results.append(spark.createDataFrame(rows, df.schema))
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", saved)
        skewagg.enable(spark)
    for other in results[1:]:
        assert_approx_df_equality(results[0], other, 1e-9, ignore_row_order=True)
    return plans
