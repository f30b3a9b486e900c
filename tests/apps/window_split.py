"""Windows over a skewed table (key 0 holds 30% of the rows), computed with skewagg off and on,
adaptive execution off and on: a part of tests/apps/local_cluster.py (``windows``), whose report
holds the four results of each query (rows as strings), the plans, and the split metrics of the
window whose hot key was split (HotKeySplitWindowExec), when the plan has one."""

from typing import Any, Dict

from pyspark.sql import SparkSession

from plans import report_variants

# Sized for small tables: skew found in KiB, a hot key of a few thousand rows split, planned for
# 64 task slots (on local[2]'s two, no hot partition outlasts an even share of the work). The
# window tests of the test session use them too (tests/test_window.py).
SPLIT_CONF = {
    "spark.skewagg.skew.minPartitionSize": "1k",
    "spark.skewagg.skew.minSplitSize": "1k",
    "spark.skewagg.skew.taskSlots": "64",
    "spark.skewagg.window.split.minKeyRows": "100",
    "spark.sql.shuffle.partitions": "32",
}

QUERIES = {
    "row_number": "SELECT k, o, row_number() OVER (PARTITION BY k ORDER BY o) AS rn FROM t",
    "ranks": "SELECT k, o, dense_rank() OVER (PARTITION BY k ORDER BY i DESC) AS dr, "
    "sum(v) OVER (PARTITION BY k ORDER BY i DESC) AS running, "
    "count(*) OVER (PARTITION BY k ORDER BY i DESC) AS c FROM t",
    "whole": "SELECT k, o, sum(v) OVER (PARTITION BY k) AS s, max(o) OVER (PARTITION BY k) AS m "
    "FROM t",
    "offsets": "SELECT k, o, lag(v, 3) OVER w AS l, lead(o) OVER w AS n, "
    "first_value(v) OVER w AS f, last_value(v) OVER w AS lv, nth_value(v, 5) OVER w AS nv "
    "FROM t WINDOW w AS (PARTITION BY k ORDER BY o)",
    # A chain of windows on the same key: routed again by the second window's order.
    "chain": "SELECT k, o, row_number() OVER (PARTITION BY k ORDER BY o) AS rn, "
    "sum(v) OVER (PARTITION BY k ORDER BY i DESC) AS running FROM t",
    # Bounded ROWS and RANGE frames: each split reads the rows its frames reach beside it.
    "moving": "SELECT k, o, sum(v) OVER (PARTITION BY k ORDER BY o ROWS BETWEEN 6 PRECEDING "
    "AND CURRENT ROW) AS s7, avg(v) OVER (PARTITION BY k ORDER BY o RANGE BETWEEN 300 "
    "PRECEDING AND 100 FOLLOWING) AS a FROM t",
    # No PARTITION BY: Spark's one task for the whole table, split by ranges of the order.
    "global": "SELECT k, o, row_number() OVER (ORDER BY o) AS rn, sum(v) OVER (ORDER BY i, o) "
    "AS running, lag(v) OVER (ORDER BY o) AS l FROM t",
}


def windows(spark: SparkSession) -> Dict[str, Any]:
    """Every query's four variants, under ``SPLIT_CONF`` (set by tests/apps/local_cluster.py)."""
    spark.sql(
        "SELECT CASE WHEN id % 10 < 3 THEN 0 ELSE (id * 7919) % 1000 + 1 END AS k, "
        "(id * 7919) % 30000 AS o, id % 13 AS i, (id * 31) % 1000 - 400 AS v "
        "FROM range(0, 30000, 1, 8)"
    ).createOrReplaceTempView("t")
    report: Dict[str, Any] = {"rows": {}, "plans": {}, "splits": {}}
    for query_name, query in QUERIES.items():
        report_variants(spark, query, report, "HotKeySplitWindowExec", prefix=f"{query_name}:")
    return report
