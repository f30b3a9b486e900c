"""Shared fixtures. The Spark session is created once, with skewagg, before any other session:
spark.jars and spark.sql.extensions are read only when the first SparkContext starts."""

from __future__ import annotations

import math
import os
from contextlib import contextmanager
from decimal import Decimal
from typing import Any, Callable, Dict, Iterable, Iterator, List, Tuple

import pyspark
import pytest
from chispa.row_comparer import are_rows_approx_equal
from chispa.rows_comparer import assert_generic_rows_equality
from chispa.schema_comparer import assert_schema_equality
from pyspark import SparkContext
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql.types import StructType

import skewagg
from plans import Plan
from subprocesses import child_env, report, spark_home, spark_submit, submit_args

os.environ.setdefault("MPLBACKEND", "Agg")  # plots render headless

SPARK_LINE: Tuple[int, ...] = tuple(int(p) for p in pyspark.__version__.split(".")[:2])
"""The installed pyspark's line, for tests of what differs between lines."""

EXPLAIN_SECTIONS = pytest.mark.skipif(
    SPARK_LINE < (4, 0), reason="Spark's EXPLAIN has extended explain providers from 4.0")

SPREAD_KEY = pytest.StashKey[Dict[str, str]]()


def spread_lines(modules: Iterable[str], between: List[str]) -> Dict[str, str]:
    """The line between the oldest and the default that runs each ``spread`` module: the i-th in
    name order on the (i mod n)-th of the n lines ``between``."""
    return {module: between[i % len(between)] for i, module in enumerate(sorted(modules))}


@pytest.hookimpl(tryfirst=True)  # before -m and -k deselect: the share is the same whatever they
def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    """With SKEWAGG_TEST_SLICE=spread (make test's Python phases), a line between the oldest and
    the default one runs its share of the modules marked ``spread`` (``spread_lines``). The
    oldest and the default line run them all, as does every line without the setting
    (docs/testing.md, "What runs where")."""
    between = skewagg.supported_spark_lines()[1:-1]
    line = ".".join(map(str, SPARK_LINE))
    if os.environ.get("SKEWAGG_TEST_SLICE") != "spread" or line not in between:
        return
    where = spread_lines({item.path.name for item in items if item.get_closest_marker("spread")},
                         between)
    config.stash[SPREAD_KEY] = where
    here: List[pytest.Item] = []
    elsewhere: List[pytest.Item] = []
    for item in items:
        (here if where.get(item.path.name, line) == line else elsewhere).append(item)
    if elsewhere:
        config.hook.pytest_deselected(items=elsewhere)
        items[:] = here


def pytest_report_collectionfinish(config: pytest.Config) -> List[str]:
    where = config.stash.get(SPREAD_KEY, {})
    return [f"spread: {module} runs on Spark {line}" for module, line in where.items()]



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


@pytest.fixture(scope="session")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Any]:
    """tests/apps/local_cluster.py on local-cluster[2,1,1024] (two executor JVMs), run once for
    every test that reads it: each part's report (``executors``, ``percentiles``, ``windows``,
    ``partial_states``), and the ``spark_home`` its workers wrote their work/ directories in."""
    home = spark_home(tmp_path_factory.mktemp("cluster"))
    result = report(spark_submit(
        "local_cluster.py", *submit_args("local-cluster[2,1,1024]"),
        "--conf", "spark.executor.memory=1g", env=child_env(SPARK_HOME=str(home)),
    ))
    return {**result, "spark_home": home}


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


def row_order(value: object) -> Tuple[object, ...]:
    """A sort key for collected values of one column: nulls first, NaN after every number, arrays,
    structs and maps by their elements."""
    if value is None:
        return (0,)
    if isinstance(value, float) and math.isnan(value):
        return (2,)
    if isinstance(value, (bool, int, float, Decimal)):
        return (1, value)
    if isinstance(value, (list, tuple)):  # arrays, and structs (Row is a tuple)
        return (3, tuple(row_order(v) for v in value))
    if isinstance(value, dict):
        return (4, tuple(sorted((row_order(k), row_order(v)) for k, v in value.items())))
    return (5, type(value).__name__, value)  # strings, binary, dates, timestamps, intervals


def differential(
    spark: SparkSession, query: Callable[[SparkSession], DataFrame]
) -> Dict[Tuple[bool, bool], Plan]:
    """Runs ``query`` with skewagg off and on, adaptive execution off and on; asserts (chispa)
    that all four give the same schema and rows, in any order, doubles within a relative 1e-9;
    returns the executed plans keyed by (skewagg, adaptive). The rows are compared as collected,
    sorted here (rows equal as they are need no comparison by tolerance)."""
    plans: Dict[Tuple[bool, bool], Plan] = {}
    results: List[Tuple[StructType, List[Row]]] = []
    saved = spark.conf.get("spark.sql.adaptive.enabled")
    try:
        for adaptive in (False, True):
            spark.conf.set("spark.sql.adaptive.enabled", str(adaptive).lower())
            for on in (False, True):
                (skewagg.enable if on else skewagg.disable)(spark)
                df = query(spark)
                rows = df.collect()
                plans[(on, adaptive)] = Plan.of(df)
                results.append((df.schema, sorted(rows, key=row_order)))
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", saved)
        skewagg.enable(spark)
    schema, expected = results[0]
    for other_schema, rows in results[1:]:
        assert_schema_equality(schema, other_schema)
        if rows != expected:
            assert_generic_rows_equality(
                expected, rows, are_rows_approx_equal, {"precision": 1e-9})
    return plans
