"""The helper calls that a Spark Connect client must answer as classic PySpark does. Each case
takes a session, classic or Connect, and returns what the helpers gave, as JSON-ready values:
tests/test_connect.py computes them on the classic session, and tests/connect/ on a client of a
Connect server started with the same settings, and compares."""

from __future__ import annotations

from typing import Any, Callable, Dict, List

from chispa.rows_comparer import assert_basic_rows_equality
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

import skewagg
from apps.partial_states import HEAVY_STATES, STATES_CONF, TWO_LEVELS
from conftest import session_settings as settings

SETTINGS = {
    # A shuffled join (the small side not broadcast) under a group-by, on 8 partitions.
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.adaptive.coalescePartitions.enabled": "false",
    "spark.skewagg.skew.minPartitionSize": "4k",
    "spark.skewagg.skew.minSplitSize": "2k",
}
"""Session settings every case runs under (the sessions share the rest: tests/test_connect.py)."""


def facts(spark: SparkSession) -> DataFrame:
    """30% of the rows on key 0, the rest spread over 1000 keys."""
    return spark.range(0, 200000).select(
        F.when(F.col("id") % 10 < 3, F.lit(0)).otherwise(F.col("id") % 1000).alias("k"),
        F.col("id").alias("v"))


def skewed_join(spark: SparkSession, variant: int) -> DataFrame:
    """A skewed join under a group-by; each ``variant`` is a query of its own (explained afresh)."""
    dims = spark.range(0, 1000).select(F.col("id").alias("k"), (F.col("id") % 7).alias("g"))
    return (facts(spark).where(F.col("v") >= variant).join(dims, "k")
            .groupBy("g").agg(F.sum("v").alias("s"), F.count(F.lit(1)).alias("n")))


def explain_before_run(spark: SparkSession) -> str:
    return skewagg.explain_text(skewed_join(spark, 1))


def explain_after_run(spark: SparkSession) -> str:
    df = skewed_join(spark, 2)
    df.collect()
    return skewagg.explain_text(df)


def explain_with_run(spark: SparkSession) -> str:
    return skewagg.explain_text(skewed_join(spark, 3), run=True)


def rows_four_ways(spark: SparkSession, collect: Callable[[], List[Row]]) -> List[Row]:
    """``collect()``'s rows with skewagg off and on, adaptive execution off and on (chispa: all
    equal), then skewagg on again."""
    results = []
    for adaptive in ("false", "true"):
        for on in (False, True):
            with settings(spark, {"spark.sql.adaptive.enabled": adaptive}):
                (skewagg.enable if on else skewagg.disable)(spark)
                try:
                    rows = collect()
                finally:
                    skewagg.enable(spark)
            results.append(rows)
    for other in results[1:]:
        assert_basic_rows_equality(results[0], other)
    return results[0]


def rows_off_and_on(spark: SparkSession) -> List[List[Any]]:
    """The rows with skewagg off and on, adaptive execution off and on (chispa: all equal)."""
    rows = rows_four_ways(spark, lambda: skewed_join(spark, 4).orderBy("g").collect())
    return [list(r) for r in rows]


WINDOW_SETTINGS = {
    "spark.skewagg.skew.taskSlots": "64",
    "spark.skewagg.window.split.minKeyRows": "100",
}
"""A window's split planned for 64 task slots, on a table of 30,000 rows."""

GLOBAL_WINDOW = (
    "SELECT o, row_number() OVER (ORDER BY o) AS rn, sum(v) OVER (ORDER BY o ROWS BETWEEN "
    "UNBOUNDED PRECEDING AND CURRENT ROW) AS s, lag(v) OVER (ORDER BY o) AS l, "
    "sum(v) OVER (ORDER BY o ROWS BETWEEN 6 PRECEDING AND CURRENT ROW) AS m, "
    "sum(v) OVER (ORDER BY o RANGE BETWEEN 50 PRECEDING AND 20 FOLLOWING) AS r "
    "FROM (SELECT (id * 7919) % 30000 AS o, id % 13 - 6 AS v FROM range(0, 30000, 1, 8))")
"""A window without PARTITION BY (running, offset, bounded ROWS and RANGE frames): Spark runs it
in one task."""


def window_without_partition_by(spark: SparkSession) -> List[Any]:
    """A window without PARTITION BY with skewagg off and on (chispa: equal rows): its rows'
    count and sums, and whether the explanation says Spark's one task was split by order."""
    results = []
    with settings(spark, WINDOW_SETTINGS):
        for on in (False, True):
            (skewagg.enable if on else skewagg.disable)(spark)
            try:
                rows = spark.sql(GLOBAL_WINDOW).orderBy("o").collect()
            finally:
                skewagg.enable(spark)
            results.append(rows)
        text = skewagg.explain_text(spark.sql(GLOBAL_WINDOW), run=True)
    assert_basic_rows_equality(results[0], results[1])
    rows = results[1]
    totals = [sum(r[c] for r in rows if r[c] is not None) for c in ("rn", "s", "l", "m", "r")]
    return [len(rows), *totals, "no PARTITION BY: Spark runs the window in one task" in text,
            "the whole partition split by order into" in text]


def heavy_states_of_few_keys(spark: SparkSession) -> List[Any]:
    """tests/apps/partial_states.py's query with skewagg off and on, adaptive execution off and
    on (chispa: equal rows), under its settings: the rows, and whether the explanation (adaptive
    execution on) says the states were merged in two levels."""
    with settings(spark, STATES_CONF):
        rows = rows_four_ways(spark, lambda: spark.sql(HEAVY_STATES).orderBy("k").collect())
        with settings(spark, {"spark.sql.adaptive.enabled": "true"}):
            text = skewagg.explain_text(spark.sql(HEAVY_STATES), run=True)
    return [[r["k"], list(r["p"]), r["n"], r["d"], r["s"]] for r in rows] + [
        f"rewritten: {TWO_LEVELS}" in text]


def stage_report(spark: SparkSession) -> List[List[int]]:
    """Per stage: its tasks and the records they read, sorted: the join's two map stages are
    submitted together, and which of them gets the lower stage id varies from run to run."""
    with skewagg.stage_report(spark) as report:
        skewed_join(spark, 5).collect()
    return sorted([row["tasks"], row["records"]] for row in report.rows())


def analyze(spark: SparkSession) -> str:
    return str(skewagg.analyze(facts(spark), "k", top=3))


def executor_builds(spark: SparkSession) -> Dict[str, str]:
    return skewagg.executor_builds(spark)


CASES: Dict[str, Callable[[SparkSession], Any]] = {
    case.__name__: case for case in (
        explain_before_run, explain_after_run, explain_with_run, rows_off_and_on, stage_report,
        analyze, executor_builds, window_without_partition_by, heavy_states_of_few_keys)
}


def answers(spark: SparkSession) -> Dict[str, Any]:
    """Every case's answer on ``spark``, under :data:`SETTINGS`."""
    with settings(spark, SETTINGS):
        return {name: case(spark) for name, case in CASES.items()}
