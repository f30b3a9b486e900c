"""Memory of a query over one very hot key: vanilla Spark vs skewagg, each in its own process
with a small JVM heap. Two queries (`--query`): an exact percentile whose hottest key has many
distinct values (skewagg's SingleKeyAggregate), and a running sum over a hot window partition
(skewagg's HotKeySplitWindow).

    .venvs/spark-4.3/bin/python benchmarks/memory.py --hot-values 50000000 --driver-memory 1g
    .venvs/spark-4.3/bin/python benchmarks/memory.py --rows 100000000 --driver-memory 1g
    .venvs/spark-4.3/bin/python benchmarks/memory.py --query window --driver-memory 1g

`--rows N` is the total: N - `--other-rows` rows on the hot key.

Data (generated, not read from files): `--hot-values` rows on key 0, each with a distinct value,
plus `--other-rows` rows spread over 1000 other keys. Query:
`groupBy(k).agg(percentile(v, array(0.1, 0.5, 0.9)))`, local[2]. Vanilla Spark holds every
distinct value of a key in a value->count map (partial maps per map task, then one merged map in
the final task); skewagg sorts the rows with Spark's external sorter and keeps one key's values
in a spillable buffer. Each variant runs in a child process (`--timeout` seconds at most);
the outcome (ok / failed with the error / timeout), wall time, executor JVM peak heap, largest
task execution memory and disk spill (from TaskTimeRecorder) go to
benchmarks/results/memory-hot<N>-<memory>.json.

`--query window`: the same rows, with `i` the row's id and `v` a long, and
`sum(v) OVER (PARTITION BY k ORDER BY i ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)`
summed over all rows (one row). Vanilla Spark's window task buffers the hot key's whole partition
(spilling past `spark.sql.windowExec.buffer.*`); skewagg splits the key by ranges of `i`
(planned for 64 task slots, `spark.skewagg.skew.taskSlots=64`: on local[2]'s two slots the hot
partition is no longer than an even share of the work). Results go to
benchmarks/results/memory-window-hot<N>-<memory>.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import List

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def child(args: argparse.Namespace) -> int:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    import skewagg
    from skewagg.stage_report import TaskTimeRecorder

    builder = (SparkSession.builder.master("local[2]").appName(f"skewagg-memory-{args.variant}")
               .config("spark.driver.memory", args.driver_memory)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.executor.metrics.pollingInterval", "100ms")
               .config("spark.sql.shuffle.partitions", "16")
               .config("spark.sql.adaptive.enabled", "true"))
    spark = skewagg.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    (skewagg.enable if args.variant == "skewagg" else skewagg.disable)(spark)
    total = args.hot_values + args.other_rows
    ids = spark.range(0, total, 1, 32)
    hot = F.col("id") < args.hot_values
    key = F.when(hot, F.lit(0)).otherwise(F.col("id") % 1000 + 1).alias("k")
    if args.query == "window":
        spark.conf.set("spark.skewagg.skew.taskSlots", "64")
        running = Window.partitionBy("k").orderBy("i").rowsBetween(
            Window.unboundedPreceding, Window.currentRow)
        # A global total (an aggregate on k above would need the window's partitioning).
        df = (ids.select(key, F.col("id").alias("i"), (F.col("id") % 1000 - 400).alias("v"))
              .select("k", F.sum("v").over(running).alias("s"))
              .agg(F.lit(0).alias("k"), F.sum("s").alias("p"), F.count("*").alias("rows")))
        operator = "HotKeySplitWindow"
    else:
        fact = ids.select(
            key,
            # Distinct per row on the hot key: a value->count map has one entry per row.
            (F.col("id") * 0.5).alias("v"),
        )
        df = fact.groupBy("k").agg(F.percentile("v", [0.1, 0.5, 0.9]).alias("p"))
        operator = "HotKeySplitAggregate"
    recorder = TaskTimeRecorder(spark)
    start = time.perf_counter()
    rows, times = recorder.measure(df.collect)  # 1001 small rows (window: 1)
    wall = time.perf_counter() - start
    plan = df._jdf.queryExecution().executedPlan().toString()
    # The hot key's percentiles; for the window, the total of the running sums and the rows.
    hot_key = [[r["p"], r["rows"]] if args.query == "window" else r["p"]
               for r in rows if r["k"] == 0][0]
    print("REPORT " + json.dumps({
        "wall_s": round(wall, 2),
        "hot_key_result": list(hot_key) if isinstance(hot_key, list) else hot_key,
        "keys": len(rows),
        "skewagg_operator": operator if operator in plan else None,
        "jvm_heap_peak": times.jvm_heap_peak,
        "peak_task_execution_memory": times.peak_execution_memory,
        "disk_spilled": times.disk_spilled,
    }), flush=True)
    spark.stop()
    return 0


def run_variant(args: argparse.Namespace, variant: str) -> dict:
    cmd = [sys.executable, __file__, "--child", "--variant", variant,
           "--hot-values", str(args.hot_values), "--other-rows", str(args.other_rows),
           "--driver-memory", args.driver_memory, "--query", args.query]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"variant": variant, "outcome": "timeout", "wall_s": args.timeout}
    wall = time.perf_counter() - start
    for line in proc.stdout.splitlines():
        if line.startswith("REPORT "):
            return {"variant": variant, "outcome": "ok", "process_wall_s": round(wall, 2),
                    **json.loads(line[len("REPORT "):])}
    errors = [line.strip() for line in (proc.stderr + proc.stdout).splitlines()
              if "Error" in line or "Exception" in line]
    return {"variant": variant, "outcome": "failed", "exit_code": proc.returncode,
            "process_wall_s": round(wall, 2), "errors": errors[:8]}


QUERIES = {
    "percentile": "groupBy(k).agg(percentile(v, array(0.1, 0.5, 0.9)))",
    "window": "sum(v) OVER (PARTITION BY k ORDER BY i ROWS BETWEEN UNBOUNDED PRECEDING AND "
              "CURRENT ROW), summed over all rows",
}


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hot-values", type=int, default=50_000_000)
    parser.add_argument("--rows", type=int, default=None,
                        help="total rows: sets --hot-values to ROWS - --other-rows")
    parser.add_argument("--other-rows", type=int, default=1_000_000)
    parser.add_argument("--driver-memory", default="1g")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per variant")
    parser.add_argument("--variants", default="skewagg,vanilla")
    parser.add_argument("--query", choices=("percentile", "window"), default="percentile")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--variant", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rows is not None:
        if args.rows <= args.other_rows:
            parser.error(f"--rows must be more than --other-rows ({args.other_rows})")
        args.hot_values = args.rows - args.other_rows
    if args.child:
        return child(args)
    results = []
    for variant in args.variants.split(","):
        result = run_variant(args, variant)
        print(json.dumps(result), flush=True)
        results.append(result)
    report = {
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": "local[2], 2 cores", "driver_memory": args.driver_memory,
        "rows": args.hot_values + args.other_rows,
        "hot_values": args.hot_values, "other_rows": args.other_rows,
        "query": QUERIES[args.query], "results": results,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = "memory-window" if args.query == "window" else "memory"
    out = RESULTS / f"{name}-hot{args.hot_values}-{args.driver_memory}.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
