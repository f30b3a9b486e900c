"""Heavy partial states of few keys (issue 68) computed with skewagg off and on, adaptive
execution off and on: a part of tests/apps/local_cluster.py (``partial_states``), whose report
holds the four results of :data:`HEAVY_STATES` (rows as strings), their plans, and skewagg's
explanation with adaptive execution on. The test session and the Connect client run the same
query (tests/helper_cases.py)."""

from typing import Any, Dict

from pyspark.sql import SparkSession

import skewagg
from plans import report_variants

HEAVY_STATES = (
    "SELECT k, percentile_approx(x, array(0.1, 0.5, 0.9), 100000) AS p, "
    "size(collect_set(x)) AS n, approx_count_distinct(x, 0.01) AS d, sum(v) AS s "
    "FROM (SELECT id % 4 AS k, (id * 7919) % 20000 AS x, id % 13 AS v "
    "FROM range(0, 40000, 1, 32)) GROUP BY k")
"""4 keys whose partial states are heavy (a sketch that keeps every value at this accuracy, a
set, a fine HLL++: each merged exactly whatever the order), written by 32 map tasks: each key's
final merge reads 32 states in one task unless they are merged in two levels."""

TWO_LEVELS = "heavy partial states merged in two levels"
"""The rewrite's name in skewagg's plan and explanation (SplitMergeOfPartialStates.Rewrite)."""

STATES_CONF = {
    "spark.skewagg.skew.taskSlots": "64",
    "spark.skewagg.skew.minPartitionSize": "4k",
    "spark.skewagg.skew.minSplitSize": "2k",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.coalescePartitions.enabled": "false",
    # The README's flags set it (tests/subprocesses.py's submit_args leave it out): under Spark's
    # default cost model the merge's added exchange is refused (the explanation says so).
    "spark.sql.adaptive.customCostEvaluatorClass": "io.skewagg.SkewAggCostEvaluator",
}
"""Planned for 64 task slots (on a test machine's few, no partition stands out against an even
share), the 4 keys in 8 shuffle partitions, pieces of a few KiB (the default minSplitSize, 1m,
would read these partitions of about 250 KiB whole)."""


def partial_states(spark: SparkSession) -> Dict[str, Any]:
    """:data:`HEAVY_STATES`' four variants, under ``STATES_CONF`` (set by
    tests/apps/local_cluster.py)."""
    report: Dict[str, Any] = {"rows": {}, "plans": {}, "splits": {}}
    report_variants(spark, HEAVY_STATES, report, None)
    # report_variants leaves skewagg on with adaptive execution: what skewagg decided there.
    report["explained"] = skewagg.explain_text(spark.sql(HEAVY_STATES), run=True)
    return report
