"""What each stage of a window split costs per row read, against Spark's window (issue 67 item 5).

Runs the benchmark's window queries over its events (`bench.py`'s tables) with skewagg off and
planned for 64 slots, records every task (skewagg's task-time recorder) and prints, per stage,
its tasks, the rows they read, the longest task, and a least-squares fit of a task's time on its
rows (ms = fixed + per-million x rows / 1e6). The split's cost decision weighs its stages with
these ratios (docs/window.md, "When a window split pays").

    python benchmarks/window_split_costs.py --rows 20000000 --repeats 2
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Dict, List, Tuple

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

import skewagg
from bench import BASE_CONF, VARIANT_CONF, WORK, scenario_queries, write_event_tables
from skewagg.advisor.makespan import StageTimes
from skewagg.stage_report import TaskTimeRecorder


def fit(stage: StageTimes) -> Tuple[float, float]:
    """(fixed ms, ms per million rows) of a least-squares line through the stage's tasks."""
    xs = [r / 1e6 for r in stage.records]
    ys = [float(d) for d in stage.durations_ms]
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if n < 3 or sxx == 0:
        per = my / mx if mx else 0.0
        return 0.0, per
    per = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - per * mx, per


def queries(events: DataFrame) -> Dict[str, DataFrame]:
    """bench.py's window-global and window-few-keys, and a whole-partition sum over the groups."""
    bench = scenario_queries(events, events, events)
    return {
        "window-global": bench["window-global"]["query"](),
        "window-few-keys": bench["window-few-keys"]["query"](),
        "whole-partition-sum": events.select(
            "ts", F.sum("v").over(Window.partitionBy("g")).alias("s")),
    }


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--max-partition-bytes", default=BASE_CONF[
        "spark.sql.files.maxPartitionBytes"], help="the scan's split size (map tasks)")
    parser.add_argument("--json", help="write the stages measured here")
    args = parser.parse_args(argv)
    builder = (SparkSession.builder.master("local[2]").appName("skewagg-split-costs")
               .config("spark.driver.memory", "10g")
               .config("spark.driver.extraJavaOptions", "-Xms10g")
               .config("spark.ui.enabled", "false"))
    spark = skewagg.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    for key, value in BASE_CONF.items():
        spark.conf.set(key, value)
    spark.conf.set("spark.sql.files.maxPartitionBytes", args.max_partition_bytes)
    base = WORK / f"rows={args.rows}-v3"  # (bench.py's tables)
    base.mkdir(parents=True, exist_ok=True)
    events = spark.read.parquet(str(write_event_tables(spark, base, args.rows)))
    recorder = TaskTimeRecorder(spark)
    out = []
    variants = {v: VARIANT_CONF[v] for v in ("vanilla", "skewagg@64")}
    for name, df in queries(events).items():
        for repeat in range(args.repeats + 1):  # (the first a warm-up, not printed)
            for variant, conf in variants.items():
                for key, value in conf.items():
                    spark.conf.set(key, value)
                _, times = recorder.measure(
                    lambda: df.agg(F.sum("s")).collect())
                if repeat == 0:
                    continue
                print(f"== {name} {variant} repeat {repeat}: makespan@64 "
                      f"{times.makespan(64) / 1000:.2f} s")
                for stage in times.stages:
                    fixed, per = fit(stage)
                    rows = sum(stage.records)
                    print(f"  stage {stage.stage} {stage.name[:60]!r}: {len(stage.records)} "
                          f"tasks, {rows:,} rows, longest {stage.max_ms} ms, median "
                          f"{stage.median_ms:.0f} ms, fit {fixed:.0f} ms + {per:.0f} ms/M rows")
                    out.append({"query": name, "variant": variant, "repeat": repeat,
                                "stage": stage.stage, "name": stage.name,
                                "records": stage.records, "ms": stage.durations_ms})
    if args.json:
        Path(args.json).write_text(json.dumps(out))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
