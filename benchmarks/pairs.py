"""Quick paired A/B runs of one benchmark query, for profiling work (not `make bench`).

    python benchmarks/pairs.py repartition vanilla,skewagg --repeats 9 [--jar PATH] [--jfr FILE]

Runs the query on the benchmark's 20M-row tables (written by `make bench` into benchmarks/work;
`tpch-q12` reads its generated orders and line items, `distinct-many*` issue 48's tables, `demo`
builds `make demo`'s 8M rows) with
each variant alternating in one JVM, the order swapped every repeat and a GC before each run,
the result written to the `noop` sink. Prints each variant's wall times, the sum of its task
times per stage, the ratios of the medians of every other variant over the first, and the median
of each repeat's own ratio, over all repeats and over those run in each order. `--jar`
loads that skewagg jar instead of the installed package's (to compare two builds, run twice);
`--jfr` records the whole JVM with Java Flight Recorder.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import skewagg
from bench import TPCH_Q12
from skewagg import demo
from skewagg.stage_report import TaskTimeRecorder

TABLES = Path(__file__).resolve().parent / "work" / "rows=20000000-v3"
VARIANTS = {
    "vanilla": {"spark.skewagg.enabled": "false"},
    "skewagg": {"spark.skewagg.enabled": "true"},
    "skewagg@64": {"spark.skewagg.enabled": "true", "spark.skewagg.skew.taskSlots": "64"},
    "skewagg+hint": {"spark.skewagg.enabled": "true"},
    # skewagg without its local aggregate before a join: what that aggregate costs or saves.
    "skewagg-join-local": {"spark.skewagg.enabled": "true",
                           "spark.skewagg.join.localAggregate.enabled": "false"},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("query", choices=["repartition", "join", "distinct", "distinct-many",
                                          "distinct-many-repartition", "tpch-q12", "demo"])
    parser.add_argument("variants", help="comma-separated: " + ", ".join(VARIANTS))
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--warmups", type=int, default=1, help="unmeasured repeats first")
    parser.add_argument("--data", choices=["uniform", "skewed"], default="uniform")
    parser.add_argument("--jar")
    parser.add_argument("--jfr")
    args = parser.parse_args()
    builder = (SparkSession.builder.master("local[2]").config("spark.driver.memory", "10g")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "200")
               .config("spark.sql.adaptive.coalescePartitions.enabled", "false")
               .config("spark.sql.autoBroadcastJoinThreshold", "-1")
               .config("spark.sql.files.maxPartitionBytes", "2MB"))
    if args.jfr:
        builder = builder.config("spark.driver.extraJavaOptions",
                                 f"-XX:StartFlightRecording=filename={args.jfr},settings=profile")
    if args.jar:
        builder = builder.config("spark.jars", args.jar) \
            .config("spark.sql.extensions", "io.skewagg.SkewAggExtensions")
    else:
        builder = skewagg.configure(builder)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    fact = spark.read.parquet(str(TABLES / f"fact_{args.data}"))
    dim = spark.read.parquet(str(TABLES / "dim"))
    q12 = TABLES / "q12" / args.data
    if args.query == "demo":
        fact, dim = demo.tables(spark)
    if args.query.startswith("distinct-many"):
        fact = spark.read.parquet(str(TABLES / "distinct_many" / f"fact_{args.data}"))
        dim = spark.read.parquet(str(TABLES / "distinct_many" / "dim"))
    queries = {
        "repartition": lambda: fact.repartition("k").groupBy("k").agg(F.sum("v").alias("s")),
        "join": lambda: fact.join(dim, "k").groupBy("k").agg(F.sum("v").alias("s")),
        "distinct": lambda: fact.join(dim, "k").groupBy("k").agg(F.countDistinct("i").alias("s")),
        "distinct-many": lambda: fact.join(dim, "k").groupBy("k")
        .agg(F.countDistinct("i").alias("s")),
        "distinct-many-repartition": lambda: fact.repartition("k").groupBy("k")
        .agg(F.countDistinct("i").alias("s")),
        "demo": lambda: fact.join(dim, "k").groupBy("k").agg(F.sum("v").alias("s")),
        "tpch-q12": lambda: spark.sql(TPCH_Q12.format(
            orders=f"parquet.`{q12 / 'orders'}`", lineitem=f"parquet.`{q12 / 'lineitem'}`")),
    }
    variants = args.variants.split(",")
    wall = {v: [] for v in variants}
    tasks = {v: [] for v in variants}
    stages = {v: [] for v in variants}
    recorder = TaskTimeRecorder(spark)
    for i in range(-args.warmups, args.repeats):
        for variant in variants if i % 2 == 0 else list(reversed(variants)):
            for key, value in VARIANTS[variant].items():
                spark.conf.set(key, value)
            spark.sparkContext._jvm.System.gc()
            start = time.perf_counter()
            query = queries[args.query]
            run = (lambda: query().hint("skew_agg")) if variant.endswith("+hint") else query
            _, times = recorder.measure(
                lambda: run().write.format("noop").mode("overwrite").save())
            if i < 0:
                continue
            wall[variant].append(time.perf_counter() - start)
            per_stage = [sum(s.durations_ms) / 1000 for s in times.stages]
            stages[variant].append(per_stage)
            tasks[variant].append(sum(per_stage))
    for v in variants:
        print(f"{v}: wall s {[round(x, 2) for x in wall[v]]}")
        print(f"{v}: task s per stage {[[round(x, 2) for x in s] for s in stages[v]]}")
    a = variants[0]
    for b in variants[1:]:
        print(f"{b} / {a}: wall {statistics.median(wall[b]) / statistics.median(wall[a]):.3f}, "
              f"task time {statistics.median(tasks[b]) / statistics.median(tasks[a]):.3f}")
        # Each repeat's pair: the run of b over the run of a, by which ran first (even repeats
        # run the variants in the given order, odd ones reversed).
        pairs = [wall[b][i] / wall[a][i] for i in range(args.repeats)]
        print(f"{b} / {a}: per-pair wall median {statistics.median(pairs):.3f}, "
              f"{a} first {statistics.median(pairs[0::2]):.3f}, "
              f"{b} first {_median_or_none(pairs[1::2])}")
    recorder.close()
    spark.stop()


def _median_or_none(values: list) -> str:
    return f"{statistics.median(values):.3f}" if values else "none"


if __name__ == "__main__":
    main()
