"""A PySpark app for spark-submit tests: prints one JSON line with what skewagg looks like in the
session spark-submit made (whose --jars/--conf the test chose), then runs a rewritten query.
``active`` is also a part of tests/apps/local_cluster.py."""

import json
from typing import Any, Dict

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import skewagg
from plans import reported


def active(spark: SparkSession) -> Dict[str, Any]:
    """Whether skewagg is loaded and active, its version, the build each executor JVM loaded, and
    a rewritten query's total and plan."""
    report: Dict[str, Any] = {"loaded": skewagg.is_loaded(spark),
                              "active": skewagg.is_active(spark)}
    if report["loaded"]:
        report["version"] = skewagg.loaded_version(spark)
        report["executors"] = skewagg.executor_builds(spark, tasks=8)
        df = (
            spark.range(0, 20000)
            .select((F.col("id") % 50).alias("k"), F.col("id").alias("v"))
            .repartition("k")
            .groupBy("k")
            .agg(F.sum("v").alias("s"))
            .hint("skew_agg")
        )
        report["total"] = df.agg(F.sum("s")).head()[0]
        report["plan"] = reported(df)
    return report


if __name__ == "__main__":
    session = SparkSession.builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    print("REPORT " + json.dumps(active(session)))
    session.stop()
