"""A long session: thousands of queries that skewagg rewrites, in one SparkSession, with
`skewagg.explain` and `skewagg.stage_report` used along the way. Every `--every` queries it
forces a full GC in the driver JVM and samples the heap used after it (MemoryMXBean), the
listeners on Spark's listener bus (all of them, and skewagg's), and the number of SQL
executions Spark's status store keeps (bounded by spark.sql.ui.retainedExecutions).

    .venvs/spark-4.3/bin/python benchmarks/long_session.py --queries 3000 --every 250

Writes benchmarks/results/long-session-<queries>.json. tests/test_long_session.py runs the same
loop, shorter, and asserts that skewagg's structures stay bounded.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Dict, List

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import skewagg

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def fact(spark: SparkSession, i: int) -> DataFrame:
    # A different literal per query: no two queries are the same plan.
    return spark.range(0, 2000, 1, 4).select(
        F.when(F.col("id") % 10 < 3, F.lit(0)).otherwise(F.col("id") % 50).alias("k"),
        (F.col("id") + F.lit(i)).alias("v"),
    )


def dim(spark: SparkSession) -> DataFrame:
    return spark.range(0, 50, 1, 2).select(F.col("id").alias("k"), (F.col("id") % 3).alias("a"))


# Rewritten queries: local aggregation before a join, before a user repartition (flushing local
# aggregate), SKEW_AGG-hinted, and a single-key percentile.
QUERIES: List[Callable[[SparkSession, int], DataFrame]] = [
    lambda s, i: fact(s, i).join(dim(s), "k").groupBy("k", "a").agg(F.sum("v"), F.count("*")),
    lambda s, i: fact(s, i).repartition("k").groupBy("k").agg(F.sum("v"), F.max("v")),
    lambda s, i: fact(s, i).repartition(3, "k").groupBy("k").agg(F.avg("v")).hint("skew_agg"),
    lambda s, i: fact(s, i).groupBy("k").agg(F.percentile("v", 0.5), F.count("*")),
]
REWRITE_MARKERS = ("SkewAggLocalStage", "FlushingPartialAggregate", "SingleKeyAggregate",
                   "HotKeySplitAggregate")


def sample(spark: SparkSession, queries_run: int) -> Dict[str, int]:
    """Driver JVM heap after a full GC, and the sizes of the structures a session accumulates."""
    jvm = spark.sparkContext._jvm
    memory = jvm.java.lang.management.ManagementFactory.getMemoryMXBean()
    memory.gc()
    memory.gc()
    listeners = spark.sparkContext._jsc.sc().listenerBus().listeners()
    names = [listeners.get(i).getClass().getName() for i in range(listeners.size())]
    status = spark._jsparkSession.sharedState().statusStore()
    return {
        "queries": queries_run,
        "heap_used_after_gc": int(memory.getHeapMemoryUsage().getUsed()),
        "listeners": len(names),
        "skewagg_listeners": sum(n.startswith("org.apache.spark.sql.skewagg.") for n in names),
        "sql_executions_kept": int(status.executionsCount()),
    }


def run(spark: SparkSession, queries: int, every: int) -> List[Dict[str, int]]:
    """Runs `queries` rewritten queries, sampling after the first `every` and every `every`."""
    samples = []
    for i in range(queries):
        df = QUERIES[i % len(QUERIES)](spark, i)
        if i % 50 == 7:
            skewagg.stage_report(spark, df.collect)
        else:
            df.collect()
        if i % 20 == 3:
            skewagg.explain_text(df)
        if i < len(QUERIES):
            plan = df._jdf.queryExecution().executedPlan().toString()
            assert any(m in plan for m in REWRITE_MARKERS), plan
        if (i + 1) % every == 0:
            samples.append(sample(spark, i + 1))
    return samples


def session() -> SparkSession:
    builder = (SparkSession.builder.master("local[2]").appName("skewagg-long-session")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.sql.autoBroadcastJoinThreshold", "-1")
               .config("spark.driver.memory", "1g"))
    spark = skewagg.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=3000)
    parser.add_argument("--every", type=int, default=250)
    args = parser.parse_args(argv)
    spark = session()
    start = time.perf_counter()
    samples = run(spark, args.queries, args.every)
    wall = time.perf_counter() - start
    for s in samples:
        print(json.dumps(s), flush=True)
    report = {
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": "local[2], 2 cores, driver heap 1g (-Xmx)",
        "queries": args.queries, "wall_s": round(wall, 1),
        "spark.sql.ui.retainedExecutions": spark.conf.get("spark.sql.ui.retainedExecutions"),
        "how": "heap_used_after_gc: MemoryMXBean.getHeapMemoryUsage().getUsed() right after two "
               "MemoryMXBean.gc() calls in the driver JVM, sampled every "
               f"{args.every} queries",
        "samples": samples,
    }
    spark.stop()
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"long-session-{args.queries}.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
