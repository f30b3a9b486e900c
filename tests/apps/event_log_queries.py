"""Writes Spark event logs of skewed (or uniform) queries, in vanilla Spark (no skewagg), for the
advisor's tests and fixtures (tests/test_advise.py, tests/eventlogs/).

    python tests/apps/event_log_queries.py OUT_DIR [--uniform] [--codec zstd] [--rolling]
        [--rows N] [--queries join,repartition,percentile,window]

Each query runs as one SQL execution of one application, whose event log lands in OUT_DIR. Hot key
0 holds 40% of the rows (--uniform: none), the others spread over 1,000 keys; 16 shuffle
partitions, coalescing off (so each partition is one task), no broadcast joins. The DISTINCT
queries (``distinct-join``, ``distinct-repartition``; not run by default) count the distinct
values of ``i``, a hash of the row over rows / 2 values: the hot key holds most of them.
``window-global`` (not run by default) numbers the rows by ``v`` with no PARTITION BY: Spark
moves them into one partition, one task, skewed or uniform.
"""

from __future__ import annotations

import argparse
import json
import os

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

QUERIES = ("join", "repartition", "percentile", "window")
DISTINCT_QUERIES = ("distinct-join", "distinct-repartition")
ONE_TASK_QUERIES = ("window-global",)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--uniform", action="store_true")
    parser.add_argument("--codec", default=None, help="lz4, lzf, snappy or zstd (default: none)")
    parser.add_argument("--rolling", action="store_true")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--queries", default=",".join(QUERIES))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("skewagg-eventlog-" + ("uniform" if args.uniform else "skewed"))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", "file://" + os.path.abspath(args.out))
        .config("spark.sql.shuffle.partitions", "16")
        .config("spark.sql.adaptive.coalescePartitions.enabled", "false")
        .config("spark.sql.autoBroadcastJoinThreshold", "-1")
        # Spark's own skew join would split the join's hot partition where no aggregate follows.
        .config("spark.sql.adaptive.skewJoin.enabled", "true")
    )
    if args.codec:
        builder = builder.config("spark.eventLog.compress", "true") \
            .config("spark.eventLog.compression.codec", args.codec)
    if args.rolling:
        builder = builder.config("spark.eventLog.rolling.enabled", "true")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")

    rows = args.rows
    ids = spark.range(0, rows, 1, 4)
    other = (F.col("id") * 7919) % 1000 + 1
    key = other if args.uniform else F.when(F.col("id") % 10 < 4, F.lit(0)).otherwise(other)
    fact = ids.select(key.alias("k"), F.col("id").alias("v"),
                      (F.abs(F.xxhash64("id")) % max(1, rows // 2)).alias("i"))
    dim = spark.range(0, 1001).select(F.col("id").alias("k"), (F.col("id") % 7).alias("d"))
    queries = {
        "join": lambda: fact.join(dim, "k").groupBy("k").agg(F.sum("v").alias("s")),
        "repartition": lambda: fact.repartition("k").groupBy("k").agg(F.sum("v").alias("s")),
        "percentile": lambda: fact.groupBy("k").agg(
            F.expr("percentile(v, 0.5)").alias("p")),
        "window": lambda: fact.select(
            "k", F.sum("v").over(Window.partitionBy("k")).alias("s")).agg(F.sum("s")),
        "window-global": lambda: fact.select(
            F.row_number().over(Window.orderBy("v")).alias("rn")).agg(F.max("rn")),
        "distinct-join": lambda: fact.join(dim, "k").groupBy("k").agg(
            F.countDistinct("i").alias("n")),
        "distinct-repartition": lambda: fact.repartition("k").groupBy("k").agg(
            F.countDistinct("i").alias("n")),
    }
    done = {}
    for name in args.queries.split(","):
        spark.sparkContext.setJobDescription(f"skewagg-advise-test {name}")
        done[name] = len(queries[name]().collect())
    print("REPORT " + json.dumps({"app": spark.sparkContext.applicationId, "rows": done}))
    spark.stop()


if __name__ == "__main__":
    main()
