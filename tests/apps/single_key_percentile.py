"""Exact percentiles of a skewed table, computed with skewagg off and on, adaptive execution off
and on, with the default settings and with hot keys split: a part of tests/apps/local_cluster.py
(``percentiles``), whose report holds, for each settings, the four results (rows as strings, so
NaN compares equal to itself), the plans, and the hot-key split metrics of the SingleKeyAggregate
that split hot keys (HotKeySplitAggregateExec), when the plan has one."""

from typing import Any, Dict

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from plans import report_variants

# The settings tests/apps/local_cluster.py runs this part under.
SHUFFLE_CONF = {"spark.sql.shuffle.partitions": "6"}

QUERY = (
    "SELECT k, percentile(v, array(0.1, 0.5, 0.9)) AS p, median(v) AS m, "
    "percentile_disc(0.3) WITHIN GROUP (ORDER BY v DESC) AS d, count(*) AS n "
    "FROM t GROUP BY k"
)


# The default settings, then hot keys split by value (key 0 holds 30% of the rows), planned for 64
# task slots: on the cluster's 2, key 0 is shorter than an even share of the work.
SETTINGS = {
    "default": {},
    "split": {"spark.skewagg.singleKey.split.minKeyRows": "1000",
              "spark.skewagg.skew.taskSlots": "64"},
}


def percentiles(spark: SparkSession) -> Dict[str, Any]:
    """The query's four variants under each of ``SETTINGS``."""
    (
        spark.range(0, 30000)
        .select(
            F.when(F.col("id") % 10 < 3, F.lit(0)).otherwise(F.col("id") % 97).alias("k"),
            F.when(F.col("id") % 101 == 7, F.lit(None))
            .when(F.col("id") % 89 == 3, F.lit(float("nan")))
            .otherwise((F.col("id") * 7919) % 1000 / 4.0)
            .alias("v"),
        )
        .createOrReplaceTempView("t")
    )
    report: Dict[str, Any] = {}
    for settings_name, settings in SETTINGS.items():
        for key, value in settings.items():
            spark.conf.set(key, value)
        report[settings_name] = {"rows": {}, "plans": {}, "splits": {}}
        report_variants(spark, QUERY, report[settings_name], "HotKeySplitAggregateExec")
        for key in settings:
            spark.conf.unset(key)
    return report
