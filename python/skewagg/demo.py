"""The main job (`make demo`, `python -m skewagg demo`): a skewed join + aggregation, skewagg
off vs on, in one session.

``fact.join(dim, "k").groupBy("k").agg(sum("v"))`` where key 0 holds 30% of the fact rows: Spark
shuffles on k for the join and then aggregates in the same tasks, so one task holds every row of
key 0. The demo runs the query with skewagg off, on (a flushing local aggregate before the join,
which merges the hot key's rows and passes the others through), and on with the SKEW_AGG hint
(every row aggregated before the join), checks the results agree, and prints the task-time spread
of the keyed stage and the wall times.
"""

from __future__ import annotations

import time
from typing import List, Optional, Sequence, Tuple

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from skewagg import session
from skewagg._bridge import bridge
from skewagg.advisor.makespan import QueryTimes
from skewagg.stage_report import TaskTimeRecorder

DEFAULT_ROWS = 8_000_000
KEYS = 1_000_000


def result_checksum(df: DataFrame) -> Tuple[Tuple[float, float], List[str]]:
    """Rows and sum of column ``s`` of ``df``, computed on the cluster (nothing large is
    collected), and skewagg's operators (SkewAggLocalStage, SingleKeyAggregate) in the plan that
    computed them, those of reused stages included."""
    totals = df.agg(F.count(F.lit(1)), F.sum("s"))
    row = totals.collect()[0]  # not head(): that runs a new limit query, not this plan
    plan = totals._jdf.queryExecution().executedPlan()
    markers = str(bridge(df.sparkSession).operatorLines(plan))
    return (float(row[0]), float(row[1] or 0.0)), [m for m in markers.splitlines() if m]


def same_result(a: Sequence[float], b: Sequence[float]) -> bool:
    # Floating-point sums differ in the last bits between any two plans (addition order).
    return all(abs(x - y) <= 1e-9 * max(abs(x), abs(y), 1.0) for x, y in zip(a, b))


def tables(spark: SparkSession, rows: int = DEFAULT_ROWS) -> Tuple[DataFrame, DataFrame]:
    """The demo's fact rows (`rows` in 64 partitions, 30% on key 0, the others uniform over
    1M keys, computed as they are read) and its dimension (one row per key)."""
    ids = spark.range(0, rows, 1, 64)
    hot = F.abs(F.xxhash64("id", F.lit(1))) % 10 < 3
    fact = ids.select(
        F.when(hot, F.lit(0)).otherwise(F.abs(F.xxhash64("id")) % KEYS).alias("k"),
        (F.col("id") % 1000 / 10.0).alias("v"),
    )
    dim = spark.range(0, KEYS, 1, 8).select(
        F.col("id").alias("k"), (F.col("id") % 100).alias("attr"))
    return fact, dim


def run(rows: Optional[int] = None) -> int:
    n = rows or DEFAULT_ROWS
    builder = (
        SparkSession.builder.master("local[*]")
        .appName("skewagg-demo")
        .config("spark.driver.memory", "6g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.autoBroadcastJoinThreshold", "-1")
        .config("spark.sql.adaptive.coalescePartitions.enabled", "false")
    )
    spark = session.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    print(session.loaded_version(spark), "| active:", session.is_active(spark))

    fact, dim = tables(spark, n)

    def query(hinted: bool) -> DataFrame:
        df = fact.join(dim, "k").groupBy("k").agg(F.sum("v").alias("s"))
        return df.hint("skew_agg") if hinted else df

    print(f"\nquery: fact.join(dim, 'k').groupBy('k').agg(sum('v')), {n:,} fact rows, "
          f"{KEYS:,} keys, key 0 holds 30% of the rows; 2 cores, adaptive execution on")
    recorder = TaskTimeRecorder(spark)
    variants = [("vanilla (skewagg off)", False, False), ("skewagg", True, False),
                ("skewagg + SKEW_AGG hint", True, True)]
    results: List[Tuple[str, Tuple[float, float], float, QueryTimes, List[str]]] = []
    result_checksum(query(False))  # warm-up
    for label, on, hinted in variants:
        (session.enable if on else session.disable)(spark)
        start = time.perf_counter()
        (checksum, markers), times = recorder.measure(lambda: result_checksum(query(hinted)))
        results.append((label, checksum, time.perf_counter() - start, times, markers))
    session.enable(spark)
    recorder.close()
    spark.stop()

    reference = results[0][1]
    equal = all(same_result(r[1], reference) for r in results)
    print(f"results equal: {equal} ({int(reference[0]):,} keys)\n")
    print(f"{'variant':<26}{'wall s':>8}{'hot task s':>12}{'median task s':>15}"
          f"{'makespan@64 s':>15}")
    for label, _, wall, times, _ in results:
        hot_stage = times.hot_stage
        print(f"{label:<26}{wall:>8.2f}{hot_stage.max_ms / 1000:>12.2f}"
              f"{hot_stage.median_ms / 1000:>15.3f}{times.makespan(64) / 1000:>15.2f}")
    base_wall, base_span = results[0][2], results[0][3].makespan(64)
    for label, _, wall, times, markers in results[1:]:
        print(f"\n{label}: wall time {wall / base_wall:.2f}x of vanilla on this machine; "
              f"makespan on 64 slots {times.makespan(64) / base_span:.2f}x of vanilla")
        for marker in markers:
            print(f"  in the plan: {marker}")
    print("\n(one run each after a warm-up; hot/median: the stage holding the query's longest "
          "task; makespan@64: every stage's measured task times list-scheduled onto 64 slots)")
    return 0 if equal else 1
