"""The main job (`make demo`, `python -m skewagg demo`): a skewed aggregation, skewagg off vs on.

Builds a fact table where key 0 holds 30% of the rows, runs
``fact.repartition("k").groupBy("k").agg(...)`` with skewagg off and on in one session, checks
that the results are equal, and shows what skewagg changed in the plan and how long each took.
"""

from __future__ import annotations

import time
from typing import Callable, List, Optional, Tuple

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

import skewagg

DEFAULT_ROWS = 4_000_000


def _timed(action: Callable[[], List[Row]]) -> Tuple[List[Row], float]:
    start = time.perf_counter()
    rows = action()
    return rows, time.perf_counter() - start


def _plan_lines(df: DataFrame) -> List[str]:
    """The exchange and aggregate lines of the executed plan (for adaptive plans, the final one)."""
    plan = df._jdf.queryExecution().executedPlan().toString()  # type: ignore[operator]
    final = plan.split("== Initial Plan ==")[0]
    return [line for line in final.splitlines() if "Exchange" in line or "HashAggregate" in line]


def _same_results(a: List[Row], b: List[Row]) -> bool:
    """Same keys and counts; sums equal up to a relative 1e-9 (floating-point addition order
    differs between plans, as it does between any two Spark plans of the same query)."""
    if len(a) != len(b):
        return False
    for x, y in zip(sorted(a), sorted(b)):
        if x["k"] != y["k"] or x["n"] != y["n"]:
            return False
        if abs(x["s"] - y["s"]) > 1e-9 * max(abs(x["s"]), abs(y["s"]), 1.0):
            return False
    return True


def run(rows: Optional[int] = None) -> int:
    n = rows or DEFAULT_ROWS
    builder = (
        SparkSession.builder.master("local[*]")
        .appName("skewagg-demo")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "64")
    )
    spark = skewagg.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    print(skewagg.loaded_version(spark))
    print(f"skewagg active: {skewagg.is_active(spark)}")

    fact = spark.range(n).select(
        F.when(F.col("id") % 10 < 3, F.lit(0)).otherwise(F.col("id") % 100_000).alias("k"),
        (F.col("id") % 1000 / 10.0).alias("v"),
    )

    def query() -> DataFrame:
        return fact.repartition("k").groupBy("k").agg(F.sum("v").alias("s"), F.count("*").alias("n"))

    print(f"\nquery: fact.repartition('k').groupBy('k').agg(sum, count) on {n:,} rows, "
          "key 0 holds 30% of them")
    results = {}
    for label, on in (("warm-up", False), ("skewagg off", False), ("skewagg on", True)):
        (skewagg.enable if on else skewagg.disable)(spark)
        df = query()
        collected, seconds = _timed(df.collect)
        results[label] = (collected, seconds, _plan_lines(df))
    skewagg.enable(spark)

    off_rows, off_s, off_plan = results["skewagg off"]
    on_rows, on_s, on_plan = results["skewagg on"]
    equal = _same_results(off_rows, on_rows)
    print(f"results equal: {equal} ({len(on_rows):,} keys)")
    print("\nplan with skewagg off (the user's exchange moves every row; partial and final "
          "aggregate run after it, in the hot key's task):")
    print("\n".join(off_plan))
    print("\nplan with skewagg on (a partial aggregate runs before the user's exchange):")
    print("\n".join(on_plan))
    print(f"\nwall time, one run each after a warm-up run, on this machine: "
          f"off {off_s:.2f} s, on {on_s:.2f} s (on/off = {on_s / off_s:.2f})")
    spark.stop()
    return 0 if equal else 1
