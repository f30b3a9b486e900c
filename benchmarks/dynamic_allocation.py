"""Under dynamic allocation: the task slots skewagg planned a split for, against the executors the
stage then ran on (docs/production.md; not `make bench`).

    python benchmarks/dynamic_allocation.py [--rows 10000000] [--map-tasks 2] [--factor 1.5]

Runs a skewed join then groupBy (30% of the fact's rows on key 0, the rest over 100,000 keys) on
`local-cluster[3,2,1024]` with dynamic allocation and shuffle tracking (0 to 3 executors of 2
cores, 1 at first), the join's local aggregate off so the split is the only remedy. Prints what
skewagg's explanation says about the aggregate (the slots it planned for) and, per stage that ran
a task, its tasks and the executors that ran them (from Spark's REST API).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import urllib.request
from pathlib import Path

import pyspark
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import skewagg


def spark_home() -> str:
    """A directory laid out like a Spark distribution over the installed pyspark: local-cluster
    starts its workers from SPARK_HOME, and they write their work/ directories there."""
    home = Path(tempfile.mkdtemp(prefix="skewagg-spark-home-"))
    pyspark_dir = Path(pyspark.__file__).resolve().parent
    for name in ("bin", "jars", "python", "sbin"):
        if (pyspark_dir / name).exists():
            os.symlink(pyspark_dir / name, home / name)
    return str(home)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--map-tasks", type=int, default=2)
    parser.add_argument("--factor", default="1.5", help="spark.skewagg.skew.factor")
    args = parser.parse_args()
    os.environ["SPARK_HOME"] = spark_home()
    builder = (
        SparkSession.builder.master("local-cluster[3,2,1024]")
        .config("spark.dynamicAllocation.enabled", "true")
        .config("spark.dynamicAllocation.shuffleTracking.enabled", "true")
        .config("spark.dynamicAllocation.minExecutors", "0")
        .config("spark.dynamicAllocation.initialExecutors", "1")
        .config("spark.dynamicAllocation.maxExecutors", "3")
        .config("spark.executor.cores", "2")
        .config("spark.executor.memory", "900m")
        .config("spark.sql.autoBroadcastJoinThreshold", "-1")
        .config("spark.sql.shuffle.partitions", "64")
        .config("spark.skewagg.join.localAggregate.enabled", "false")
        .config("spark.skewagg.skew.factor", args.factor)
        .config("spark.skewagg.skew.minPartitionSize", "1m")
        .config("spark.skewagg.skew.minSplitSize", "256k")
    )
    spark = skewagg.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    key = F.when(F.col("id") % 10 < 3, F.lit(0)).otherwise((F.col("id") * 7919) % 100000)
    fact = spark.range(0, args.rows, 1, args.map_tasks).select(
        key.alias("k"), F.col("id").alias("v"))
    dim = spark.range(0, 100000, 1, 2).select(
        F.col("id").alias("k"), (F.col("id") % 10).alias("a"))
    query = (fact.join(dim, "k").groupBy("k").agg(F.sum(F.col("v") * F.col("a")).alias("s"))
             .agg(F.sum("s")))
    query.collect()
    print(skewagg.explain_text(query))
    sc = spark.sparkContext
    api = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}"
    for stage in sorted(json.load(urllib.request.urlopen(f"{api}/stages")),
                        key=lambda s: s["stageId"]):
        tasks = json.load(urllib.request.urlopen(
            f"{api}/stages/{stage['stageId']}/{stage['attemptId']}/taskList?length=100000"))
        if tasks:
            executors = sorted({t["executorId"] for t in tasks})
            print(f"stage {stage['stageId']}: {len(tasks)} tasks on executors {executors}")
    spark.stop()


if __name__ == "__main__":
    main()
