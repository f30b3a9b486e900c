"""skewagg benchmark suite (`make bench`).

Every scenario runs on SKEWED data (key 0 holds 30% of the rows, the rest uniform over 1M keys)
and UNIFORM data, with these variants side by side in one session:

  vanilla        skewagg off
  forced-skew    skewagg off; Spark's skew join forced, with skewagg's 16MB skew floor
  salted         skewagg off; the query rewritten by hand with a random salt of 16 values
  pre-aggregated skewagg off; the join queries rewritten by hand to aggregate the fact table
                 completely before the join (exact here because dim holds one row per key): the
                 fastest plan in the issue's measurements (0.62x vanilla's wall time), the
                 bar skewagg is measured against
  skewagg        skewagg on, splits planned for this machine's task slots (2: a hot partition
                 of 30% is shorter than an even share of 50%, so nothing is split)
  skewagg+hint   skewagg on, and the aggregate hinted with SKEW_AGG (local aggregation before
                 a join needs that evidence)
  skewagg@64     skewagg on, splits planned for 64 task slots (spark.skewagg.skew.taskSlots):
                 what skewagg does on a cluster, run on this machine's 2 cores (its makespan@64
                 is the number that counts; its wall time is a 2-core machine running a plan
                 made for 64)
  vanilla-aqe-off, skewagg@64-aqe-off
                 (window scenarios) the same with adaptive execution off; skewagg's window
                 split then decides when the window's shuffle has run

(a variant a scenario has no query for, such as pre-aggregated without a join, is skipped)

The TPC-H scenarios (tpch-q2, tpch-q8, tpch-q9, tpch-q20, tpch-q21: benchmarks/tpch.py) run
TPC-H's texts on TPC-H-like tables with Spark's defaults for broadcast joins and splits, vanilla
against skewagg's default plan (`--default-plan` adds the A/A control).

The holistic scenarios (exact percentile, collect_list, a high-cardinality percentile over
about 10M distinct keys; `--scenarios percentile,collect-list,high-cardinality`), on the same
keys with a continuous value column, compare vanilla
with skewagg's one-key-at-a-time operator (SingleKeyAggregate), plus, for collect_list, the
opt-in `spark.skewagg.singleKey.collect.enabled` (`--variants` applies to the other scenarios
only); they also record each run's largest task
execution memory, disk spill and the executor JVM's peak heap, and go to their own section of
docs/benchmarks.md.

The few-keys scenarios (issue 68, fewer keys than slots; `--scenarios
few-keys,few-keys-collect-set,few-keys-collect-list`) aggregate a table read in 2000 map tasks
(at 20M rows) by `id % 4`: percentile_approx of 6 columns at 99 percentiles, and collect_set and
collect_list of a column of 5,000 values; vanilla runs each key's final merge of the 2000
partial buffers in one task. They compare vanilla, the A/A control, skewagg and skewagg@64, check
the rows themselves (percentiles within percentile_approx's accuracy of vanilla's, equal sets,
each list's size, sum and sum of squares) and go to their own section.

Per run it records wall time and, from every task of the query, the hot stage's longest and
median task and the simulated makespan on 64 and 512 slots (tasks list-scheduled; see
skewagg.advisor.makespan), and whether skewagg rewrote the plan. Variants alternate within each
repeat, in an order rotated between repeats, after a JVM garbage collection, so drift and the
previous run's garbage hit all alike; the median wall time over the repeats is reported. Every
run's result checksum must equal vanilla's.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

import skewagg
import tpch
from headline import commit_of, wall_ratio
from skewagg import demo
from skewagg._bridge import bridge
from skewagg._jars import spark_line
from skewagg.demo import result_checksum, same_result
from skewagg.stage_report import TaskTimeRecorder

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "benchmarks" / "work"
RESULTS = ROOT / "benchmarks" / "results"
DOC = ROOT / "docs" / "benchmarks.md"
KEYS = 1_000_000
SALTS = 16
VARIANTS = ["vanilla", "forced-skew", "salted", "pre-aggregated", "skewagg", "skewagg+hint",
            "skewagg@64"]
# Variants that run a scenario's own query (the key in scenario_queries) instead of its "query".
OWN_QUERY = {"salted": "salted", "pre-aggregated": "pre"}
HOLISTIC = ("percentile", "collect-list", "high-cardinality")
# Windows Spark runs in one task per key or for the whole table (issue 67): an event table, `ts`
# unique in the order its files were written, 4 groups; their own section, with task memory.
# window-global-two-tasks: window-global over the events read by 2 tasks, where a split cannot pay.
ONE_TASK = ("window-global", "window-few-keys", "window-moving", "window-global-two-tasks")
# Aggregates over fewer keys than slots (issue 68): 4 keys, every map task holding all of them, so
# vanilla merges each key's partial buffers from every map task in one task.
FEW_KEYS = ("few-keys", "few-keys-collect-set", "few-keys-collect-list")
SECTIONS = {"holistic": HOLISTIC, "window-one-task": ONE_TASK, "few-keys": FEW_KEYS}
# The data sets a scenario runs on, when not SKEWED and UNIFORM.
SCENARIO_DATA = {"high-cardinality": ["highcard"],
                 "window-global": ["events"], "window-few-keys": ["events"],
                 "window-moving": ["events"], "window-global-two-tasks": ["events"],
                 **{scenario: ["4-keys"] for scenario in FEW_KEYS},
                 "key-shapes": ["unique", "few", "hot-unique", "hot-few"],
                 "demo": ["skewed"]}
BUCKETS = 64
# --default-plan: the variants of a scenario, when not vanilla and skewagg.
DEFAULT_PLAN_VARIANTS = {"demo": ["vanilla", "skewagg", "skewagg+hint"]}
# --default-plan's control: vanilla's plan once more, a variant of its own in the same rotation.
# Its ratio over vanilla is what two identical plans measure apart in that run (an A/A test):
# a variant's ratio within that spread is parity as far as the run can tell.
CONTROL = "vanilla-again"

BASE_CONF = {
    "spark.sql.shuffle.partitions": "200",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.coalescePartitions.enabled": "false",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    # Many map tasks, as on a cluster: the files are written with 1MB row groups.
    "spark.sql.files.maxPartitionBytes": "2MB",
}
# Settings of one scenario over BASE_CONF. join-default-splits: the join at Spark's default split
# size, which on 2 cores reads each fact table in 2 tasks of about 48MB; there a map task's
# partial aggregate sees ~10M rows, and uniform keys repeat within it.
SCENARIO_CONF = {"join-default-splits": {"spark.sql.files.maxPartitionBytes": "128MB"}}
# TPC-H Q2, Q8, Q9, Q20, Q21 (issue 69) with Spark's defaults: broadcast joins (10MB) and 128MB
# splits, as issue 69 measured them.
TPCH = tuple(tpch.QUERIES)
SCENARIO_CONF.update({scenario: {"spark.sql.autoBroadcastJoinThreshold": "10MB",
                                 "spark.sql.files.maxPartitionBytes": "128MB"}
                      for scenario in TPCH})
VARIANT_CONF = {
    "vanilla": {"spark.skewagg.enabled": "false"},
    CONTROL: {"spark.skewagg.enabled": "false"},
    "forced-skew": {
        "spark.skewagg.enabled": "false",
        "spark.sql.adaptive.forceOptimizeSkewedJoin": "true",
        "spark.sql.adaptive.skewJoin.skewedPartitionThresholdInBytes": "16MB",
    },
    "salted": {"spark.skewagg.enabled": "false"},
    "pre-aggregated": {"spark.skewagg.enabled": "false"},
    "skewagg": {"spark.skewagg.enabled": "true"},
    "skewagg+hint": {"spark.skewagg.enabled": "true"},
    "skewagg@64": {"spark.skewagg.enabled": "true", "spark.skewagg.skew.taskSlots": "64"},
    "skewagg@64+float": {"spark.skewagg.enabled": "true", "spark.skewagg.skew.taskSlots": "64",
                         "spark.skewagg.window.split.floatingPoint.enabled": "true"},
    "skewagg+collect": {"spark.skewagg.enabled": "true",
                        "spark.skewagg.singleKey.collect.enabled": "true"},
}
# The same variants without adaptive execution, compared with vanilla without it.
AQE_OFF = "-aqe-off"
for _name in ("vanilla", "skewagg@64"):
    VARIANT_CONF[_name + AQE_OFF] = {**VARIANT_CONF[_name], "spark.sql.adaptive.enabled": "false"}
RESET_KEYS = sorted({k for conf in VARIANT_CONF.values() for k in conf})
# The few-keys data (write_few_keys_tables): x0..x5 integers in [0, few_keys_range(rows)), each
# value exactly FEW_KEYS_COPIES times per key; c over FEW_KEYS_SET_VALUES values;
# FEW_KEYS_ROWS_PER_FILE rows per file (2000 files at 20M rows).
FEW_KEYS_COLUMNS = [f"x{j}" for j in range(6)]
FEW_KEYS_COPIES = 5
FEW_KEYS_SET_VALUES = 5_000
FEW_KEYS_ROWS_PER_FILE = 10_000
FEW_KEYS_PERCENTILES = [p / 100 for p in range(1, 100)]
FEW_KEYS_ACCURACY = 10_000  # percentile_approx's default
# Where each column's multiplier lies in its range (irrational fractions: values spread evenly).
FEW_KEYS_STEPS = [0.6180339887, 0.4142135624, 0.7320508076, 0.2360679775, 0.6457513111,
                  0.3166247904]


def few_keys_range(rows: int) -> int:
    """The x columns' range: each key (rows / 4 rows) holds each value FEW_KEYS_COPIES times
    (1,000,000 values at 20M rows)."""
    return max(1, rows // (4 * FEW_KEYS_COPIES))


def few_keys_bound(rows: int) -> float:
    """How far two runs' percentile_approx may lie apart in value. Its rank is within n / accuracy
    of the exact percentile's over a key's n rows; each value fills exactly n / range ranks, so
    that is range / accuracy in value (plus one where the ranks cross into the next value). Two
    plans (a split plan merges the sketches in another order) are each that close to the exact
    percentile, so at most twice that apart."""
    return 2 * (few_keys_range(rows) / FEW_KEYS_ACCURACY + 1)


def write_tables(spark: SparkSession, rows: int) -> Path:
    """fact_skewed, fact_uniform (k long, v double, i int) and dim (k, attr) as Parquet, once."""
    base = WORK / f"rows={rows}-v3"
    if (base / "_done").exists():
        return base
    ids = spark.range(0, rows, 1, 32)
    uniform_key = F.abs(F.xxhash64("id")) % KEYS
    cols = [(F.col("id") % 1000 / 10.0).alias("v"), (F.col("id") % 97).cast("int").alias("i")]
    def write(df: DataFrame, name: str) -> None:
        df.write.mode("overwrite").option("parquet.block.size", 1 << 20).parquet(str(base / name))

    write(ids.select(uniform_key.alias("k"), *cols), "fact_uniform")
    skewed_key = F.when(F.abs(F.xxhash64("id", F.lit(1))) % 10 < 3, F.lit(0)).otherwise(uniform_key)
    write(ids.select(skewed_key.alias("k"), *cols), "fact_skewed")
    write(spark.range(0, KEYS, 1, 8).select(
        F.col("id").alias("k"), (F.col("id") % 100).alias("attr")), "dim")
    for data in ("skewed", "uniform"):
        spark.read.parquet(str(base / f"fact_{data}")).repartition(BUCKETS, "k").write \
            .mode("overwrite").option("parquet.block.size", 1 << 20).bucketBy(BUCKETS, "k") \
            .option("path", str(base / f"bucketed_{data}")).saveAsTable(f"bench_bucketed_{data}")
    (base / "_done").touch()
    return base


def write_holistic_tables(
        spark: SparkSession, base: Path, rows: int, high_cardinality: bool) -> Path:
    """holistic/fact_{skewed,uniform}: the local-global keys, with `v` a continuous value (nearly
    every row's distinct, as latencies or prices are: percentile's buffer holds every distinct
    value, so the local-global data's 1,000 values would keep it small); with `high_cardinality`
    also fact_highcard: 2x rows rows over `rows` possible keys (about 0.86 x rows distinct).
    Once."""
    path = base / "holistic"
    ids = spark.range(0, rows, 1, 32)
    value = (F.abs(F.xxhash64("id", F.lit(2))) % 100_000_000 / 1000.0).alias("v")
    cols = [value, (F.col("id") % 97).cast("int").alias("i")]
    uniform_key = F.abs(F.xxhash64("id")) % KEYS
    skewed_key = F.when(F.abs(F.xxhash64("id", F.lit(1))) % 10 < 3, F.lit(0)).otherwise(uniform_key)
    tables = {"fact_uniform": lambda: ids.select(uniform_key.alias("k"), *cols),
              "fact_skewed": lambda: ids.select(skewed_key.alias("k"), *cols)}
    if high_cardinality:
        tables["fact_highcard"] = lambda: spark.range(0, 2 * rows, 1, 32).select(
            (F.abs(F.xxhash64("id")) % rows).alias("k"), *cols)
    for name, df in tables.items():
        if not (path / name / "_SUCCESS").exists():
            df().write.mode("overwrite").option("parquet.block.size", 1 << 20) \
                .parquet(str(path / name))
    return path


def write_event_tables(spark: SparkSession, base: Path, rows: int) -> Path:
    """events: `rows` rows of ts (unique, in the order the files are written, as an event log's
    are), g (4 groups) and v (a long with nulls every 17th row). Once."""
    path = base / "events"
    if not (path / "_SUCCESS").exists():
        spark.range(0, rows, 1, 32).select(
            F.col("id").alias("ts"), (F.abs(F.xxhash64("id")) % 4).alias("g"),
            F.when(F.col("id") % 17 == 0, F.lit(None)).otherwise((F.col("id") * 31) % 1000 - 400)
            .alias("v"),
        ).write.mode("overwrite").option("parquet.block.size", 1 << 20).parquet(str(path))
    return path


def write_few_keys_tables(spark: SparkSession, base: Path, rows: int) -> Path:
    """few_keys: `rows` rows of id (0 to rows - 1), x0..x5 and c (FEW_KEYS_SET_VALUES values),
    in one Parquet file per FEW_KEYS_ROWS_PER_FILE rows: 2000 files at 20M rows. x0..x5 are
    integers in [0, range) (few_keys_range), each exactly uniform within each key of `id % 4`:
    the key's i-th row (i = id / 4) holds (i * step) % range, step coprime with range, so i
    over each block of range rows takes every value once, and a rank converts exactly to a
    value (random values would add sampling noise, about the square root of the rank distance,
    to that conversion); every map task's values spread over the whole range (the step is an
    irrational fraction of the range). Each file is far below the 2MB
    maxPartitionBytes, and a file costs openCostInBytes (4MB) in a split, so Spark reads each in a
    map task of its own: 2000 map tasks, as a table of 2000 files on a cluster is read, each
    holding every key of `id % 4` (the issue's query). Files rather than a repartition(2000)
    before the aggregate, which would add a shuffle of the raw rows the issue's query has not.
    Scaled by `rows`, so a map task's work stays as at 20M. Once."""
    path = base / "few_keys"
    if not (path / "_SUCCESS").exists():
        files = max(1, rows // FEW_KEYS_ROWS_PER_FILE)
        values = few_keys_range(rows)

        def step(fraction: float) -> int:
            a = max(1, int(fraction * values))
            while math.gcd(a, values) != 1:
                a += 1
            return a

        i = F.floor(F.col("id") / 4)
        spark.range(0, rows, 1, files).select(
            "id",
            *[(i * step(fraction) % values).cast("int").alias(name)
              for fraction, name in zip(FEW_KEYS_STEPS, FEW_KEYS_COLUMNS)],
            (F.abs(F.xxhash64("id", F.lit(20))) % FEW_KEYS_SET_VALUES).cast("int").alias("c"),
        ).write.mode("overwrite").parquet(str(path))
    return path


def write_key_shape_tables(spark: SparkSession, base: Path, rows: int) -> Path:
    """key_shapes: `rows` rows of v with one key column per shape: unique (every key once), few
    (100 keys), hot_unique (30% on key 0, the others unique), hot_few (30% on key 0, the others
    over 100 keys). Once."""
    path = base / "key_shapes"
    if not (path / "_SUCCESS").exists():
        hot = F.abs(F.xxhash64("id", F.lit(1))) % 10 < 3
        few = F.abs(F.xxhash64("id")) % 100 + 1
        spark.range(0, rows, 1, 32).select(
            (F.col("id") + 1).alias("unique"), few.alias("few"),
            F.when(hot, F.lit(0)).otherwise(F.col("id") + 1).alias("hot_unique"),
            F.when(hot, F.lit(0)).otherwise(few).alias("hot_few"),
            (F.col("id") % 1000 / 10.0).alias("v"),
        ).write.mode("overwrite").option("parquet.block.size", 1 << 20).parquet(str(path))
    return path


def write_distinct_tables(spark: SparkSession, base: Path, rows: int) -> Path:
    """distinct_many/{fact_skewed,fact_uniform,dim}: issue 48's query data, rows x 2/5 fact rows
    (8M at 20M) of k and i, i over 100,000 values; in fact_skewed key 0 holds 30% of the rows
    (so about 100,000 distinct values of i), the others uniform over 400,000 keys as in
    fact_uniform; dim holds the 400,000 keys once. Once."""
    path = base / "distinct_many"
    if (path / "_done").exists():
        return path
    keys = 400_000
    ids = spark.range(0, rows * 2 // 5, 1, 32)
    value = (F.abs(F.xxhash64("id", F.lit(4))) % 100_000).cast("int").alias("i")
    uniform_key = F.abs(F.xxhash64("id")) % keys
    hot = F.abs(F.xxhash64("id", F.lit(1))) % 10 < 3
    for data, key in (("uniform", uniform_key), ("skewed", F.when(hot, 0).otherwise(uniform_key))):
        ids.select(key.alias("k"), value).write.mode("overwrite") \
            .option("parquet.block.size", 1 << 20).parquet(str(path / f"fact_{data}"))
    spark.range(0, keys, 1, 8).select(F.col("id").alias("k"), (F.col("id") % 100).alias("attr")) \
        .write.mode("overwrite").parquet(str(path / "dim"))
    (path / "_done").touch()
    return path


def write_q12_tables(spark: SparkSession, base: Path, rows: int) -> Path:
    """TPC-H-like orders (rows x 3/40: 1.5M at 20M) and line items (rows x 3/10: 6M), the columns
    TPC-H Q12 reads: q12/{skewed,uniform}/{orders,lineitem}; in skewed, 30% of the line items are
    of one order. Once."""
    path = base / "q12"
    orders_n, lines_n = rows * 3 // 40, rows * 3 // 10
    priorities = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"]
    modes = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"]

    def pick(values: List[str], seed: int) -> Column:
        return F.element_at(F.array(*[F.lit(v) for v in values]),
                            (F.abs(F.xxhash64("id", F.lit(seed))) % len(values) + 1).cast("int"))

    for data in ("skewed", "uniform"):
        out = path / data
        if (out / "_done").exists():
            continue
        spark.range(0, orders_n, 1, 8).select(
            (F.col("id") * 4 + 1).alias("o_orderkey"), pick(priorities, 3).alias("o_orderpriority"),
        ).write.mode("overwrite").parquet(str(out / "orders"))
        order = (F.abs(F.xxhash64("id")) % orders_n) * 4 + 1
        if data == "skewed":
            order = F.when(F.abs(F.xxhash64("id", F.lit(1))) % 10 < 3, F.lit(1)).otherwise(order)
        ship = F.date_add(F.lit("1992-01-01").cast("date"),
                          (F.abs(F.xxhash64("id", F.lit(5))) % 2500).cast("int"))
        commit = (F.abs(F.xxhash64("id", F.lit(9))) % 90 - 30).cast("int")
        receipt = (F.abs(F.xxhash64("id", F.lit(11))) % 30 + 1).cast("int")
        spark.range(0, lines_n, 1, 16).select(
            order.alias("l_orderkey"), ship.alias("l_shipdate"), pick(modes, 7).alias("l_shipmode"),
            F.date_add(ship, commit).alias("l_commitdate"),
            F.date_add(ship, receipt).alias("l_receiptdate"),
        ).write.mode("overwrite").parquet(str(out / "lineitem"))
        (out / "_done").touch()
    return path


TPCH_Q12 = """
SELECT l_shipmode,
  sum(CASE WHEN o_orderpriority = '1-URGENT' OR o_orderpriority = '2-HIGH' THEN 1 ELSE 0 END)
    AS high_line_count,
  sum(CASE WHEN o_orderpriority <> '1-URGENT' AND o_orderpriority <> '2-HIGH' THEN 1 ELSE 0 END)
    AS low_line_count
FROM {orders} AS orders, {lineitem} AS lineitem
WHERE o_orderkey = l_orderkey AND l_shipmode IN ('MAIL', 'SHIP')
  AND l_commitdate < l_receiptdate AND l_shipdate < l_commitdate
  AND l_receiptdate >= date '1994-01-01' AND l_receiptdate < date '1994-01-01' + interval '1' year
GROUP BY l_shipmode ORDER BY l_shipmode"""


def register_bucketed(spark: SparkSession, base: Path) -> None:
    """The bucketed tables live in this run's session catalog; re-register existing files."""
    for data in ("skewed", "uniform"):
        name = f"bench_bucketed_{data}"
        if not spark.catalog.tableExists(name):
            location = base / f"bucketed_{data}"
            spark.sql(f"CREATE TABLE {name} (k BIGINT, v DOUBLE, i INT) USING parquet "
                      f"CLUSTERED BY (k) INTO {BUCKETS} BUCKETS LOCATION '{location}'")


def salted(fact: DataFrame, dim: DataFrame) -> tuple:
    salt = (F.rand(7) * SALTS).cast("int").alias("salt")
    salts = fact.sparkSession.range(SALTS).select(F.col("id").cast("int").alias("salt"))
    return fact.select("*", salt), dim.crossJoin(salts)


def collected_rows(df: DataFrame) -> Tuple[List[list], List[str]]:
    """Every row of `df` (a few: one per key), sorted, and skewagg's operators in the plan that
    computed them (as result_checksum gives them)."""
    rows = sorted([list(row) for row in df.collect()])
    plan = df._jdf.queryExecution().executedPlan()
    markers = str(bridge(df.sparkSession).operatorLines(plan))
    return rows, [m for m in markers.splitlines() if m]


def percentile_difference(a: List[list], b: List[list]) -> float:
    """The largest difference between two results of the few-keys percentiles (per key, a list of
    percentiles per column), at the same key, column and percentile; infinite where their keys,
    columns or lengths differ, or one has a null the other has not."""
    if [row[0] for row in a] != [row[0] for row in b]:
        return math.inf
    worst = 0.0
    for row_a, row_b in zip(a, b):
        if len(row_a) != len(row_b):
            return math.inf
        for xs, ys in zip(row_a[1:], row_b[1:]):
            if xs is None or ys is None or len(xs) != len(ys):
                if xs != ys:
                    return math.inf
                continue
            for x, y in zip(xs, ys):
                if (x is None) != (y is None):
                    return math.inf
                if x is not None:
                    worst = max(worst, abs(x - y))
    return worst


def same_sets(a: List[list], b: List[list]) -> bool:
    """Two results of collect_set per key: the same keys, each with the same set (any order)."""
    def sets(rows: List[list]) -> List[list]:
        return [[row[0], *[sorted(x) for x in row[1:]]] for row in rows]
    return sets(a) == sets(b)


def scenario_queries(fact: DataFrame, dim: DataFrame, bucketed: DataFrame,
                     q12: Path | None = None, tpch_data: Path | None = None, rows: int = 0
                     ) -> Dict[str, Dict[str, Any]]:
    """For each scenario: the query as a user writes it, and the hand-salted version (`rows`:
    the rows the data sets were written with)."""
    def join_sum() -> DataFrame:
        return fact.join(dim, "k").groupBy("k").agg(F.sum("v").alias("s"))

    def join_sum_salted() -> DataFrame:
        f, d = salted(fact, dim)
        return (f.join(d, ["k", "salt"]).groupBy("k", "salt").agg(F.sum("v").alias("p"))
                .groupBy("k").agg(F.sum("p").alias("s")))

    def repartition_sum() -> DataFrame:
        return fact.repartition("k").groupBy("k").agg(F.sum("v").alias("s"))

    def repartition_sum_salted() -> DataFrame:
        f, _ = salted(fact, dim)
        return (f.repartition("k", "salt").groupBy("k", "salt").agg(F.sum("v").alias("p"))
                .groupBy("k").agg(F.sum("p").alias("s")))

    def join_sum_pre() -> DataFrame:
        return fact.groupBy("k").agg(F.sum("v").alias("s")).join(dim, "k").select("k", "s")

    def subset_sum() -> DataFrame:
        return fact.join(dim, "k").groupBy("k", "attr").agg(F.sum("v").alias("s"))

    def subset_sum_salted() -> DataFrame:
        f, d = salted(fact, dim)
        return (f.join(d, ["k", "salt"]).groupBy("k", "attr", "salt").agg(F.sum("v").alias("p"))
                .groupBy("k", "attr").agg(F.sum("p").alias("s")))

    def subset_sum_pre() -> DataFrame:
        return (fact.groupBy("k").agg(F.sum("v").alias("s")).join(dim, "k")
                .select("k", "attr", "s"))

    def join_distinct() -> DataFrame:
        return fact.join(dim, "k").groupBy("k").agg(F.countDistinct("i").alias("s"))

    def join_distinct_salted() -> DataFrame:
        f, d = salted(fact, dim)
        return (f.join(d, ["k", "salt"]).select("k", "i").distinct()
                .groupBy("k").agg(F.count("i").alias("s")))

    def join_distinct_pre() -> DataFrame:
        return (fact.groupBy("k").agg(F.countDistinct("i").alias("s")).join(dim, "k")
                .select("k", "s"))

    def repartition_distinct() -> DataFrame:
        return fact.repartition("k").groupBy("k").agg(F.countDistinct("i").alias("s"))

    def bucketed_sum() -> DataFrame:
        return bucketed.groupBy("k").agg(F.sum("v").alias("s"))

    def bucketed_sum_salted() -> DataFrame:
        salt = (F.rand(7) * SALTS).cast("int").alias("salt")
        return (bucketed.select("*", salt).groupBy("k", "salt").agg(F.sum("v").alias("p"))
                .groupBy("k").agg(F.sum("p").alias("s")))

    def percentile() -> DataFrame:
        return fact.groupBy("k").agg(F.percentile("v", 0.5).alias("s"))

    def collect_list() -> DataFrame:
        # The list's sum: reads every element, whatever their order (Spark gives none).
        return fact.groupBy("k").agg(
            F.aggregate(F.collect_list("v"), F.lit(0.0), lambda acc, x: acc + x).alias("s"))

    def unique_key_join() -> DataFrame:
        # TPC-H Q12's shape: the aggregates read only dim, joined on its unique key k (nothing
        # for a local aggregate of dim to merge), grouped by a column of the filtered fact side.
        high = F.when(F.col("attr") < 20, 1).otherwise(0)
        return (fact.where(F.col("i") < 5).join(dim, "k").groupBy("i")
                .agg(F.sum(high).alias("s"), F.sum(1 - high).alias("low")))

    def three_way_join() -> DataFrame:
        # TPC-H Q3's shape: line items (fact rows with v > 10, about 3.6 per order (k, j))
        # joined to the orders of one customer segment in five (dim exploded to 5 orders per
        # key, joined to a third table) and grouped by order and its column; the aggregate reads
        # only the line items, a product of two of their columns.
        segment = dim.sparkSession.range(100).select(
            F.col("id").alias("attr"), (F.col("id") % 5).alias("segment"))
        orders = dim.join(segment.where(F.col("segment") == 1), "attr").select(
            "k", "attr", F.explode(F.array(*[F.lit(j) for j in range(5)])).alias("j"))
        lines = fact.where(F.col("v") > 10).withColumn("j", F.col("i") % 5)
        return (lines.join(orders, ["k", "j"]).groupBy("k", "j", "attr")
                .agg(F.sum(F.col("v") * (1 - F.col("i") / 100)).alias("s")))

    def window_sum() -> DataFrame:
        return fact.select("k", F.sum("v").over(Window.partitionBy("k")).alias("s"))

    def window_running_sum() -> DataFrame:
        # RANGE frame (the default with ORDER BY): i has ties, a peer group per value.
        return fact.select("k", F.sum("v").over(Window.partitionBy("k").orderBy("i")).alias("s"))

    def window_row_number() -> DataFrame:
        return fact.select(
            "k", F.row_number().over(Window.partitionBy("k").orderBy("v")).alias("s"))

    def ordered_by_ts(window: Window, events: DataFrame = fact) -> DataFrame:
        # row_number, a running sum and lag over the window, checked as one sum: all longs, so
        # every plan's rows are exactly Spark's.
        running = window.rowsBetween(Window.unboundedPreceding, Window.currentRow)
        return events.select(
            "ts", (F.row_number().over(window) + F.coalesce(F.sum("v").over(running), F.lit(0))
                   + F.coalesce(F.lag("v").over(window), F.lit(0))).alias("s"))

    def window_global() -> DataFrame:
        return ordered_by_ts(Window.orderBy("ts"))

    def window_global_two_tasks() -> DataFrame:
        # As a table of two files is read: the window's shuffle has two map outputs, each half
        # the table, which a split would sample and route whole (docs/window.md, "When a window
        # split pays").
        return ordered_by_ts(Window.orderBy("ts"), fact.coalesce(2))

    def window_few_keys() -> DataFrame:
        return ordered_by_ts(Window.partitionBy("g").orderBy("ts"))

    def window_moving() -> DataFrame:
        # Moving frames over the last 7 rows and 3 rows either side, checked as one sum of longs.
        by_ts = Window.orderBy("ts")
        return fact.select(
            "ts", (F.coalesce(F.sum("v").over(by_ts.rowsBetween(-6, 0)), F.lit(0))
                   + F.coalesce(F.max("v").over(by_ts.rowsBetween(-3, 3)), F.lit(0))).alias("s"))

    def tpch_q12() -> DataFrame:
        spark = fact.sparkSession
        assert q12 is not None
        # Checked on both counts: s = high * 1,000,000 + low.
        return spark.sql(TPCH_Q12.format(orders=f"parquet.`{q12 / 'orders'}`",
                                         lineitem=f"parquet.`{q12 / 'lineitem'}`")) \
            .withColumn("s", F.col("high_line_count") * 1_000_000 + F.col("low_line_count"))

    def tpch_query(scenario: str) -> Callable[[], DataFrame]:
        def query() -> DataFrame:
            assert tpch_data is not None
            tpch.register(fact.sparkSession, tpch_data)
            return fact.sparkSession.sql(tpch.QUERIES[scenario])
        return query

    def few_keys_percentiles() -> DataFrame:
        return fact.groupBy((F.col("id") % 4).alias("k")).agg(
            *[F.percentile_approx(name, FEW_KEYS_PERCENTILES, FEW_KEYS_ACCURACY).alias(name)
              for name in FEW_KEYS_COLUMNS])

    def few_keys_collect_set() -> DataFrame:
        return fact.groupBy((F.col("id") % 4).alias("k")).agg(F.collect_set("c").alias("s"))

    def few_keys_collect_list() -> DataFrame:
        # Each key's list (5M values at 20M rows) checked as a multiset: its size, sum and sum
        # of squares, computed in the same stage as the final merge.
        listed = fact.groupBy((F.col("id") % 4).alias("k")).agg(F.collect_list("c").alias("l"))
        return listed.select("k", F.size("l").alias("n"),
                             F.expr("aggregate(l, 0L, (a, x) -> a + x)").alias("sum"),
                             F.expr("aggregate(l, 0L, (a, x) -> a + x * x)").alias("squares"))

    def demo_join() -> DataFrame:
        demo_fact, demo_dim = demo.tables(fact.sparkSession)
        return demo_fact.join(demo_dim, "k").groupBy("k").agg(F.sum("v").alias("s"))

    holistic = ["vanilla", "skewagg", "skewagg@64"]
    without_aqe = ["vanilla" + AQE_OFF, "skewagg@64" + AQE_OFF]
    plain = ["vanilla", "skewagg", "skewagg+hint", "skewagg@64"]
    # With the A/A control: what vanilla's plan measures against itself in the same run.
    one_task = ["vanilla", CONTROL, "skewagg", "skewagg@64"] + without_aqe
    few_keys = ["vanilla", CONTROL, "skewagg", "skewagg@64"]
    return {
        "percentile": {"query": percentile, "variants": holistic},
        "collect-list": {"query": collect_list, "variants": holistic + ["skewagg+collect"]},
        "high-cardinality": {"query": percentile, "variants": holistic},
        "join": {"query": join_sum, "salted": join_sum_salted, "pre": join_sum_pre},
        "join-default-splits": {"query": join_sum, "pre": join_sum_pre,
                                "conf": SCENARIO_CONF["join-default-splits"],
                                "variants": ["vanilla", "pre-aggregated", "skewagg",
                                             "skewagg+hint"]},
        "bucketed": {"query": bucketed_sum, "salted": bucketed_sum_salted},
        "repartition": {"query": repartition_sum, "salted": repartition_sum_salted},
        "subset-key": {"query": subset_sum, "salted": subset_sum_salted, "pre": subset_sum_pre},
        "distinct": {"query": join_distinct, "salted": join_distinct_salted,
                     "pre": join_distinct_pre},
        # A hot key with about 100,000 distinct values (issue 48), after a join and a repartition.
        "distinct-many": {"query": join_distinct, "variants": holistic},
        "distinct-many-repartition": {"query": repartition_distinct, "variants": holistic},
        "unique-key-join": {"query": unique_key_join, "variants": plain},
        "three-way-join": {"query": three_way_join, "variants": plain},
        # The repartition query on keys that never repeat, few keys, a hot key over either.
        "key-shapes": {"query": repartition_sum, "variants": plain},
        "tpch-q12": {"query": tpch_q12, "variants": ["vanilla", "skewagg"]},
        **{scenario: {"query": tpch_query(scenario), "conf": SCENARIO_CONF[scenario],
                      "variants": ["vanilla", "skewagg"]} for scenario in TPCH},
        # `make demo`'s query and its own 8M rows: its default plan against its SKEW_AGG plan.
        "demo": {"query": demo_join, "variants": ["vanilla", "skewagg", "skewagg+hint"]},
        "window-sum": {"query": window_sum, "variants": holistic + without_aqe},
        # v is a double: split only with spark.skewagg.window.split.floatingPoint.enabled.
        "window-running-sum": {"query": window_running_sum,
                               "variants": holistic + ["skewagg@64+float"]},
        "window-row-number": {"query": window_row_number, "variants": holistic + without_aqe},
        "window-global": {"query": window_global, "variants": one_task},
        "window-few-keys": {"query": window_few_keys, "variants": one_task},
        "window-moving": {"query": window_moving, "variants": one_task},
        "window-global-two-tasks": {"query": window_global_two_tasks, "variants": one_task},
        # Checked on the rows themselves: "result" computes what each run's is compared by,
        # "same" compares it with vanilla's, "difference" says how far it is (in the table).
        "few-keys": {"query": few_keys_percentiles, "variants": few_keys,
                     "result": collected_rows,
                     "same": lambda a, b: percentile_difference(a, b) <= few_keys_bound(rows),
                     "difference": percentile_difference},
        "few-keys-collect-set": {"query": few_keys_collect_set, "variants": few_keys,
                                 "result": collected_rows, "same": same_sets},
        "few-keys-collect-list": {"query": few_keys_collect_list, "variants": few_keys,
                                  "result": collected_rows, "same": lambda a, b: a == b},
    }


def run_once(spark: SparkSession, recorder: TaskTimeRecorder, variant: str,
             queries: Dict[str, Any]) -> dict:
    for key in RESET_KEYS:
        spark.conf.unset(key)
    for key, value in {**BASE_CONF, **queries.get("conf", {}), **VARIANT_CONF[variant]}.items():
        spark.conf.set(key, value)
    if variant in OWN_QUERY:
        query = queries[OWN_QUERY[variant]]
    elif variant == "skewagg+hint":
        query = lambda: queries["query"]().hint("skew_agg")  # noqa: E731
    else:
        query = queries["query"]
    result_of = queries.get("result", result_checksum)
    spark.sparkContext._jvm.System.gc()  # the previous variant's garbage is not this one's cost
    start = time.perf_counter()
    (result, markers), times = recorder.measure(lambda: result_of(query()))
    rewritten = bool(markers)
    wall = time.perf_counter() - start
    hot = times.hot_stage
    return {
        "wall_s": wall,
        "checksum": list(result),
        "rewritten": rewritten,
        "hot_task_ms": hot.max_ms,
        "median_task_ms": hot.median_ms,
        "hot_stage_tasks": len(hot.durations_ms),
        "makespan64_ms": times.makespan(64),
        "makespan512_ms": times.makespan(512),
        "peak_task_execution_memory": times.peak_execution_memory,
        "disk_spilled": times.disk_spilled,
        "jvm_heap_peak": times.jvm_heap_peak,
    }


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scenarios",
                        default="join,join-default-splits,repartition,bucketed,subset-key,distinct,"
                        "distinct-many,distinct-many-repartition,unique-key-join,three-way-join,"
                        "key-shapes,tpch-q12," + ",".join(TPCH) + ",demo,window-sum,"
                        "window-running-sum,window-row-number")
    parser.add_argument("--variants", default=",".join(VARIANT_CONF),
                        help="run only these of each scenario's variants")
    parser.add_argument("--warmups", type=int, default=1,
                        help="warm-up runs of each variant before the measured repeats")
    parser.add_argument("--driver-memory", default="10g")
    parser.add_argument("--default-plan", action="store_true",
                        help="only vanilla and skewagg's default plan (and the demo's SKEW_AGG "
                        "plan), into their own section of docs/benchmarks.md and results file")
    parser.add_argument("--event-log", metavar="DIR",
                        help="write the session's Spark event log into DIR, each run's SQL "
                        "execution described as 'SCENARIO DATA VARIANT' (the advisor's check, "
                        "benchmarks/advise_check.py); no results or docs are written")
    args = parser.parse_args(argv)
    tree = source_tree()  # what the run measures: the tree as it starts
    scenarios = args.scenarios.split(",")
    def section_of(scenario: str) -> str:
        return next((name for name, members in SECTIONS.items() if scenario in members),
                    "local-global")

    section = section_of(scenarios[0])
    if len({section_of(s) for s in scenarios}) > 1:
        parser.error("run the holistic scenarios (" + ",".join(HOLISTIC) + "), the one-task "
                     "windows (" + ",".join(ONE_TASK) + "), the few-keys ones ("
                     + ",".join(FEW_KEYS) + ") and the local-global ones in separate "
                     "invocations: they write separate sections")
    if args.default_plan:
        section = "default-plan"

    builder = (SparkSession.builder.master("local[2]").appName("skewagg-bench")
               .config("spark.driver.memory", args.driver_memory)
               # A heap of fixed size. A growable heap shrinks after the GC before each run, and
               # the first two tasks of every stage then took 150-230 ms where the others took
               # about 35 (the bucketed query, 20M rows, -Xmx8g); with -Xms8g at most 120 ms.
               .config("spark.driver.extraJavaOptions", f"-Xms{args.driver_memory}")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               # Executor metrics (JVM heap peak per task) sampled every 100 ms, not per heartbeat.
               .config("spark.executor.metrics.pollingInterval", "100ms")
               .config("spark.sql.warehouse.dir", str(WORK / "warehouse")))
    if args.event_log:
        Path(args.event_log).mkdir(parents=True, exist_ok=True)
        builder = builder.config("spark.eventLog.enabled", "true") \
            .config("spark.eventLog.dir", str(Path(args.event_log).resolve()))
    spark = skewagg.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    for key, value in BASE_CONF.items():
        spark.conf.set(key, value)
    base = write_tables(spark, args.rows)
    register_bucketed(spark, base)
    facts = write_holistic_tables(spark, base, args.rows, "high-cardinality" in scenarios) \
        if section == "holistic" else base
    recorder = TaskTimeRecorder(spark)
    spark_version = spark.version
    line = spark_line(spark_version)
    dim = spark.read.parquet(str(base / "dim"))
    results = []
    for scenario in scenarios:
        for data in SCENARIO_DATA.get(scenario, ["skewed", "uniform"]):
            joined = dim
            if scenario.startswith("distinct-many"):
                many = write_distinct_tables(spark, base, args.rows)
                fact = spark.read.parquet(str(many / f"fact_{data}"))
                joined = spark.read.parquet(str(many / "dim"))
            elif scenario in ONE_TASK:
                fact = spark.read.parquet(str(write_event_tables(spark, base, args.rows)))
            elif scenario in FEW_KEYS:
                fact = spark.read.parquet(str(write_few_keys_tables(spark, base, args.rows)))
            elif scenario == "key-shapes":
                fact = spark.read.parquet(str(write_key_shape_tables(spark, base, args.rows))) \
                    .select(F.col(data.replace("-", "_")).alias("k"), "v")
            else:
                fact = spark.read.parquet(str(facts / f"fact_{data}"))
            bucketed = spark.table(f"bench_bucketed_{data}") \
                if data in ("skewed", "uniform") else fact
            q12 = write_q12_tables(spark, base, args.rows) / data if scenario == "tpch-q12" \
                else None
            tpch_data = tpch.write_tables(spark, base, args.rows) / data \
                if scenario in TPCH else None
            queries = scenario_queries(fact, joined, bucketed, q12, tpch_data,
                                       args.rows)[scenario]
            chosen = DEFAULT_PLAN_VARIANTS.get(scenario, ["vanilla", "skewagg"]) \
                if args.default_plan else args.variants.split(",")
            variants = [v for v in queries.get("variants", VARIANTS)
                        if v in chosen and OWN_QUERY.get(v, "query") in queries]
            if args.default_plan and variants[:1] == ["vanilla"]:
                variants.insert(1, CONTROL)
            runs: Dict[str, List[dict]] = {v: [] for v in variants}
            # Warm-up: file listing, and each variant's code JIT-compiled.
            for variant in variants * args.warmups:
                spark.sparkContext.setJobDescription(f"{scenario} {data} {variant} warm-up")
                run_once(spark, recorder, variant, queries)
            for repeat in range(args.repeats):
                # Rotate the order so no variant always follows the same one.
                shift = repeat % len(variants)
                for variant in variants[shift:] + variants[:shift]:
                    spark.sparkContext.setJobDescription(f"{scenario} {data} {variant}")
                    runs[variant].append(run_once(spark, recorder, variant, queries))
            reference = runs[variants[0]][0]["checksum"]
            same = queries.get("same", same_result)
            for variant in variants:
                last = runs[variant][-1]
                entry = {
                    "line": line, "scenario": scenario, "data": data, "variant": variant,
                    "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    "wall_s": statistics.median(r["wall_s"] for r in runs[variant]),
                    "wall_s_runs": [round(r["wall_s"], 3) for r in runs[variant]],
                    "equal_to_vanilla": all(same(r["checksum"], reference)
                                            for r in runs[variant]),
                    **{k: v for k, v in last.items() if k not in ("wall_s", "checksum")},
                    # One run's makespan moves with a single slow task: the median of the runs.
                    **{k: statistics.median(r[k] for r in runs[variant])
                       for k in ("makespan64_ms", "makespan512_ms")},
                    "makespan64_ms_runs": [r["makespan64_ms"] for r in runs[variant]],
                }
                if "difference" in queries:
                    # The largest difference from vanilla's first run's rows, over the runs.
                    difference = max(queries["difference"](r["checksum"], reference)
                                     for r in runs[variant])
                    entry["difference"] = None if math.isinf(difference) else difference
                results.append(entry)
                print(json.dumps(entry), flush=True)
    spark.stop()
    if args.event_log:
        print(f"wrote the event log into {args.event_log}")
        return 0

    report = {
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **tree,
        "rows": args.rows, "repeats": args.repeats, "warmups": args.warmups,
        "machine": "local[2]",
        "spark": spark_version, "line": line,
        "spark_conf": BASE_CONF, "driver_memory": args.driver_memory, "fixed_heap": True,
        "results": results,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = "" if section == "local-global" else f"-{section}"
    render_section = {"local-global": render, "holistic": render_holistic,
                      "window-one-task": render_one_task, "few-keys": render_few_keys,
                      "default-plan": render_default_plan}[section]
    out = RESULTS / f"bench-rows{args.rows}{suffix}-spark{line}.json"
    if out.exists():
        report = merged(json.loads(out.read_text()), report, scenarios)
    out.write_text(json.dumps(report, indent=1) + "\n")
    text = render_section(report) + render_lines(report, suffix)
    DOC.write_text(with_section(DOC.read_text() if DOC.exists() else "", section, text))
    print(f"wrote {out.relative_to(ROOT)} and {DOC.relative_to(ROOT)}")
    return 0 if all(r["equal_to_vanilla"] for r in results) else 1


def source_tree() -> dict:
    """The commit the run measured and whether the tree had changes (None outside git)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    try:
        return {"commit": git("rev-parse", "--short", "HEAD"),
                "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "dirty": None}


def merged(previous: dict, report: dict, scenarios: List[str]) -> dict:
    """`report` holding, besides its own scenarios, the rows of `previous` (the last report of
    this line and size) for the scenarios it did not run, each row with the time and commit it
    was measured at (its own, else its report's), so a run of some scenarios replaces only
    theirs."""
    if previous.get("rows") != report["rows"]:
        return report
    measured_at = {k: previous.get(k) for k in ("when", "commit", "dirty")}
    kept = [{**measured_at, **r} for r in previous["results"] if r["scenario"] not in scenarios]
    order = list(dict.fromkeys([r["scenario"] for r in previous["results"]] + scenarios))
    results = sorted(kept + report["results"], key=lambda r: order.index(r["scenario"]))
    return {**report, "results": results}


# When splits began to be planned for task slots (issue 20, merged as 3872d15).
TASK_SLOTS_SINCE = "2026-11-24T16:00"
# When every variant got its own warm-up runs (--warmups); before, one run of vanilla.
WARMUP_EACH_SINCE = "2026-11-24T20:00"


def before_task_slots(rows: List[dict], when: str) -> str:
    """A note naming the scenarios measured before splits were planned for task slots: their
    skewagg split hot partitions whatever the slots, as skewagg@64 does."""
    older = list(dict.fromkeys(r["scenario"] for r in rows
                               if r.get("when", when) < TASK_SLOTS_SINCE))
    if not older:
        return ""
    return (" " + ", ".join(older) + " were measured before " + TASK_SLOTS_SINCE + ", when "
            "splits were not yet planned for task slots: their skewagg split hot partitions "
            "whatever the slots, as skewagg@64 does.")


def measured(report: dict) -> str:
    """When and at which commit the report's rows were measured: once, or, for rows kept from
    earlier runs, when each scenario's run started and its commit."""
    started: Dict[str, tuple] = {}
    for r in report["results"]:
        when = r.get("when", report["when"])[:16]
        commit = commit_of(r if "commit" in r else report)
        earliest = started.get(r["scenario"], (when, commit))
        started[r["scenario"]] = min(earliest, (when, commit))
    times: Dict[tuple, List[str]] = {}
    for scenario, at in started.items():
        times.setdefault(at, []).append(scenario)
    if len(times) < 2:
        return f"Measured {report['when']}{commit_of(report)}"
    commits = {commit for _, commit in times}
    if len(commits) == 1:
        return "Measured " + "; ".join(f"{', '.join(s)} from {w}" for (w, _), s in
                                       sorted(times.items())) + commits.pop()
    return "Measured " + "; ".join(f"{', '.join(s)} from {w}{c}" for (w, c), s in
                                   sorted(times.items()))


def with_section(doc: str, section: str, text: str) -> str:
    """`doc` with the part between this section's markers replaced by `text` (appended when the
    doc has no such section), so each invocation rewrites only its own scenarios' tables."""
    start, end = f"<!-- bench:{section} -->", f"<!-- /bench:{section} -->"
    block = f"{start}\n{text}{end}\n"
    if start in doc and end in doc:
        return doc[:doc.index(start)] + block + doc[doc.index(end) + len(end) + 1:]
    return (doc.rstrip("\n") + "\n\n" if doc else "") + block


def heap(report: dict) -> str:
    """How the JVM heap was sized, for runs that recorded it."""
    if report.get("fixed_heap"):
        return f", in a heap of fixed size ({report['driver_memory']})"
    return ""


def render_one_task(report: dict) -> str:
    """Windows Spark runs in one task (the window-one-task section: `ONE_TASK`)."""
    return memory_table(report, written_by(
        "Windows in one task: no PARTITION BY, fewer keys than slots", ONE_TASK) + [
        f"{measured(report)} on {report['machine']} (2 cores, driver memory "
        f"{report.get('driver_memory', '?')}{heap(report)}), {report['rows']:,} events (ts "
        "unique, in the order of the files; g one of 4 groups; v a long), median wall time of "
        f"{report['repeats']} runs per variant, alternating. Queries: `row_number()`, a running "
        "`sum(v)` (ROWS frame) and `lag(v)` over `Window.orderBy(\"ts\")` (window-global, "
        "which vanilla runs in one task) and over `Window.partitionBy(\"g\").orderBy(\"ts\")` "
        "(window-few-keys, one task per group), checked as one sum; window-moving: a `sum(v)` "
        "over the last 7 rows and a `max(v)` over 3 rows either side (bounded ROWS frames) over "
        "`Window.orderBy(\"ts\")`, checked as one sum; window-global-two-tasks: window-global's "
        "query over the events read by 2 tasks (`coalesce(2)`, as a table of two files is), "
        "whose window's shuffle has 2 map outputs a split would read whole twice "
        "(docs/window.md, \"When a window split pays\"). vanilla-again is vanilla "
        "once more (the A/A control: what identical plans measure apart in this run); "
        "skewagg@64 plans for 64 task slots, skewagg for this machine's 2. vs vanilla: the ratio "
        "of the medians, then the lowest and highest ratio within one repeat. Peak task memory: "
        "the largest `peakExecutionMemory` of one task.",
        ""])


def written_by(title: str, scenarios: tuple) -> List[str]:
    """A section's title and the note that `bench.py --scenarios ...` writes it."""
    return [f"## {title}", "", f"<!-- Written by `benchmarks/bench.py --scenarios "
            f"{','.join(scenarios)}`; do not edit by hand. -->", ""]


def render_holistic(report: dict) -> str:
    return memory_table(report, written_by(
        "Holistic aggregates one key at a time (SingleKeyAggregate)", HOLISTIC) + [
        f"{measured(report)} on {report['machine']} (2 cores, driver memory "
        f"{report.get('driver_memory', '?')}{heap(report)}), {report['rows']:,} fact rows "
        "(high-cardinality: "
        f"{2 * report['rows']:,} rows over {report['rows']:,} possible keys), median wall time of "
        f"{report['repeats']} runs per variant, alternating as above. The keys are the "
        "local-global scenarios' (SKEWED: key 0 holds 30% of the rows); `v` is a continuous "
        "value, nearly every row's distinct (on the local-global data's 1,000 distinct values "
        "percentile's buffers stay small: that run is "
        "benchmarks/results/bench-rows10000000-holistic-1000-values.json). vs vanilla: the "
        "ratio of the medians, then the lowest and highest ratio within one repeat. Queries: "
        "`groupBy(k).agg(percentile(v, 0.5))`, `groupBy(k).agg(aggregate(collect_list(v), ...))` "
        "(the list's sum). Peak task memory: the largest `peakExecutionMemory` of one task; "
        "JVM heap peak: the executor JVM's peak heap while the query's tasks ran (one JVM in "
        "local mode); spill: bytes all tasks spilled to disk.",
        ""])


def render_few_keys(report: dict) -> str:
    """Aggregates over fewer keys than slots (the few-keys section: `FEW_KEYS`, issue 68)."""
    rows = report["results"]
    by = {(r["scenario"], r["data"], r["variant"]): r for r in rows}
    files = max(1, report["rows"] // FEW_KEYS_ROWS_PER_FILE)
    lines = written_by("Fewer keys than slots: aggregates over 4 keys", FEW_KEYS) + [
        f"{measured(report)} on {report['machine']} (2 cores, driver memory "
        f"{report.get('driver_memory', '?')}{heap(report)}), {report['rows']:,} rows in "
        f"{files:,} Parquet files, each read by a map task of its own (issue 68: 2000 map tasks "
        f"at 20M rows), median wall time of {run_counts(rows)} runs per variant, alternating. "
        "The rows: `id` (0 to rows - 1), x0..x5 integers in "
        f"[0, {few_keys_range(report['rows']):,}), each value exactly {FEW_KEYS_COPIES} times "
        "in each key, spread over every file (`(id / 4 * step) % range`), c one of "
        f"{FEW_KEYS_SET_VALUES:,} values. Queries, grouped "
        "by `id % 4` (every map task holds all 4 keys, so vanilla merges each key's partial "
        "buffers of every map task in one task): few-keys, `percentile_approx` of x0..x5 at "
        "the 99 percentiles 0.01..0.99 (accuracy "
        f"{FEW_KEYS_ACCURACY:,}); few-keys-collect-set, `collect_set(c)`; few-keys-collect-list, "
        "`collect_list(c)`, each list's size, sum and sum of squares. Checked on the rows: "
        "vanilla's first run is the reference; every run's percentiles are within "
        f"{few_keys_bound(report['rows']):g} of it at each key, column and percentile "
        "(2 x (range / accuracy + 1): each approximation's rank is within rows / accuracy of "
        "the exact percentile's, which in these values is range / accuracy, plus one where it "
        "crosses into the next value; a plan merging the sketches in another order may differ "
        "from vanilla's by that in the last ranks), its sets and list sums equal. largest "
        "difference: the "
        "largest difference from vanilla's first run in any run of the variant. vanilla-again "
        "is vanilla once more (the A/A control: what "
        "identical plans measure apart in this run); vs control: the ratio of the median wall "
        "times over vanilla-again's. skewagg plans for this machine's 2 task slots, skewagg@64 "
        "for 64. vs vanilla: the ratio of the medians, then the lowest and highest ratio within "
        "one repeat; makespan@64 vs vanilla: the ratio of the median makespans@64. JVM heap "
        "peak: the executor JVM's peak heap while the query's tasks ran (these aggregates' "
        "buffers are objects, outside a task's `peakExecutionMemory`).",
        "",
        "| scenario | data | variant | wall s | vs vanilla | vs control | makespan@64 s "
        "| makespan@64 vs vanilla | hot task ms | median task ms | hot stage tasks "
        "| JVM heap peak MiB | rewritten | largest difference | equal |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        vanilla = by.get((r["scenario"], r["data"], "vanilla"))
        control = by.get((r["scenario"], r["data"], CONTROL))
        ratio = wall_ratio(r, vanilla) if vanilla else ""
        vs_control = f"{r['wall_s'] / control['wall_s']:.2f}" \
            if control and r["variant"] not in ("vanilla", CONTROL) else ""
        makespan = f"{r['makespan64_ms'] / max(vanilla['makespan64_ms'], 1):.2f}" \
            if vanilla else ""
        difference = "" if "difference" not in r else "mismatch" if r["difference"] is None \
            else f"{r['difference']:g}"
        lines.append(
            f"| {r['scenario']} | {r['data']} | {r['variant']} | {r['wall_s']:.2f} | {ratio} "
            f"| {vs_control} | {r['makespan64_ms'] / 1000:.2f} | {makespan} "
            f"| {r['hot_task_ms']} | {r['median_task_ms']:.0f} | {r['hot_stage_tasks']} "
            f"| {r['jvm_heap_peak'] / (1 << 20):.0f} "
            f"| {'yes' if r['rewritten'] else ''} | {difference} "
            f"| {'yes' if r['equal_to_vanilla'] else 'NO'} |")
    return "\n".join(lines) + "\n"


def memory_table(report: dict, intro: List[str]) -> str:
    """`intro`, then per scenario, data and variant its times, task memory and spill."""
    rows = report["results"]
    by = {(r["scenario"], r["data"], r["variant"]): r for r in rows}
    mib = 1 << 20
    lines = intro + [
        "| scenario | data | variant | wall s | vs vanilla | hot task ms | median task ms "
        "| makespan@64 s | peak task memory MiB | JVM heap peak MiB | spill MiB | rewritten "
        "| equal |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        vanilla = by.get((r["scenario"], r["data"], baseline(r["variant"])))
        ratio = wall_ratio(r, vanilla) if vanilla else ""
        lines.append(
            f"| {r['scenario']} | {r['data']} | {r['variant']} | {r['wall_s']:.2f} | {ratio} "
            f"| {r['hot_task_ms']} | {r['median_task_ms']:.0f} | {r['makespan64_ms'] / 1000:.2f} "
            f"| {r['peak_task_execution_memory'] / mib:.0f} | {r['jvm_heap_peak'] / mib:.0f} "
            f"| {r['disk_spilled'] / mib:.0f} | {'yes' if r['rewritten'] else ''} "
            f"| {'yes' if r['equal_to_vanilla'] else 'NO'} |")
    ratios = makespan_ratios(by)
    return "\n".join(lines + (ratios if ratios[5:] else [])) + "\n"


def run_counts(rows: List[dict]) -> str:
    """How many runs each variant's median is of: "3", or "3 to 6" across scenarios."""
    counts = sorted({len(r["wall_s_runs"]) for r in rows if r.get("wall_s_runs")})
    if not counts:
        return "?"
    return str(counts[0]) if counts[0] == counts[-1] else f"{counts[0]} to {counts[-1]}"


def baseline(variant: str) -> str:
    """The vanilla variant `variant` is compared with: with adaptive execution as it runs."""
    return "vanilla" + AQE_OFF if variant.endswith(AQE_OFF) else "vanilla"


def order_ratios(r: dict, vanilla: dict, variants: List[str]) -> List[str]:
    """The median ratio of `r`'s wall time over vanilla's in the repeats where vanilla ran first,
    then in those where `r`'s variant did (the order rotates by one variant each repeat)."""
    by_order: Dict[bool, List[float]] = {True: [], False: []}
    n = len(variants)
    for repeat, (a, b) in enumerate(zip(r["wall_s_runs"], vanilla["wall_s_runs"])):
        order = variants[repeat % n:] + variants[:repeat % n]
        by_order[order.index("vanilla") < order.index(r["variant"])].append(a / b)
    return [f"{statistics.median(by_order[first]):.2f} ({len(by_order[first])})"
            if by_order[first] else "" for first in (True, False)]


TPCH_TEXT = (
    " " + ", ".join(TPCH) + ": TPC-H's texts (the specification's validation parameters) on "
    "TPC-H-like tables of rows x 3/10 line items, rows x 3/40 orders, rows / 100 parts with "
    "four suppliers each and rows / 2000 suppliers (benchmarks/tpch.py), in SKEWED data 30% of "
    "`partsupp` on one part (Q2's) and 30% of `lineitem` on another (Q8's, Q9's and Q20's), "
    "with Spark's defaults for joins and splits (broadcast joins up to 10MB, 128MB splits).")


def render_default_plan(report: dict) -> str:
    """skewagg's default plan against vanilla (`--default-plan`), per scenario and data set."""
    rows = report["results"]
    by = {(r["scenario"], r["data"], r["variant"]): r for r in rows}
    lines = [
        "## skewagg's default plan against vanilla",
        "",
        "<!-- Written by `make bench-default` (benchmarks/bench.py --default-plan); do not edit "
        "by hand. -->",
        "",
        f"{measured(report)}: the scenarios above with vanilla and skewagg's default plan "
        "(the demo also with its `SKEW_AGG` plan), the same tables and settings, median wall "
        f"time of {run_counts(rows)} runs per variant after a warm-up run of each; the order of "
        "the variants rotates each repeat, so a variant runs before vanilla in some repeats and "
        "after it in the others. vanilla-again is vanilla's plan once more as a variant of its "
        "own, a control: its ratio is what two identical plans measured apart in the same run. "
        "vs vanilla: the ratio of the medians, then in brackets the lowest and highest ratio "
        "within one repeat; vanilla first, variant first: the median ratio within the repeats "
        "run in that order (how many); vs control: the ratio of the medians over vanilla-again's."
        + (TPCH_TEXT if any(r["scenario"] in TPCH for r in rows) else ""),
        "",
        "| scenario | data | variant | wall s | vs vanilla | vanilla first | variant first "
        "| vs control | rewritten | equal |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        vanilla = by.get((r["scenario"], r["data"], "vanilla"))
        if vanilla is None:
            continue
        variants = [v for (s, d, v) in by if (s, d) == (r["scenario"], r["data"])]
        orders = order_ratios(r, vanilla, variants) if r is not vanilla else ["", ""]
        control = by.get((r["scenario"], r["data"], CONTROL))
        vs_control = f"{r['wall_s'] / control['wall_s']:.2f}" \
            if control and r["variant"] not in ("vanilla", CONTROL) else ""
        lines.append(
            f"| {r['scenario']} | {r['data']} | {r['variant']} | {r['wall_s']:.2f} "
            f"| {wall_ratio(r, vanilla)} | {orders[0]} | {orders[1]} | {vs_control} "
            f"| {'yes' if r['rewritten'] else ''} | {'yes' if r['equal_to_vanilla'] else 'NO'} |")
    return "\n".join(lines) + "\n"


def makespan_ratios(by: Dict[tuple, dict]) -> List[str]:
    """The table of makespan@64 on SKEWED data over UNIFORM data, per scenario and variant."""
    lines = ["", "Makespan@64, SKEWED / UNIFORM:", "",
             "| scenario | variant | skewed / uniform |", "|---|---|---|"]
    for (scenario, data, variant), r in by.items():
        if data == "skewed" and (scenario, "uniform", variant) in by:
            u = by[(scenario, "uniform", variant)]
            lines.append(f"| {scenario} | {variant} | "
                         f"{r['makespan64_ms'] / max(u['makespan64_ms'], 1):.2f} |")
    return lines


def render(report: dict) -> str:
    rows = report["results"]
    by = {(r["scenario"], r["data"], r["variant"]): r for r in rows}
    lines = [
        "# Benchmarks",
        "",
        "<!-- Written by `make bench` (benchmarks/bench.py); do not edit by hand. -->",
        "",
        f"{measured(report)} on {report['machine']} (2 cores), "
        f"{report['rows']:,} fact rows, median wall time of {run_counts(rows)} runs per "
        f"variant after warm-up runs of each variant (before {WARMUP_EACH_SINCE}, one of vanilla), "
        "variants alternating within each repeat (order rotated between repeats, "
        f"a JVM GC before each run{heap(report)}). SKEWED: key 0 holds 30% of the "
        "rows, the rest uniform over 1M keys; UNIFORM: all uniform. Adaptive execution on, 200 "
        "shuffle partitions, partition coalescing and broadcast joins off.",
        "",
        "Variants (benchmarks/bench.py): vanilla (skewagg off); forced-skew (Spark's skew join "
        "forced, 16MB floor); salted (the query salted by hand, 16 salts); pre-aggregated (the "
        "join queries rewritten by hand to aggregate the fact table completely before the join, "
        "exact because dim holds one row per key: the issue's fastest plan); skewagg (splits "
        "planned for this machine's 2 task slots, where no hot partition of 30% outlasts an "
        "even share); skewagg+hint (the aggregate hinted `SKEW_AGG`); skewagg@64 (splits "
        "planned for 64 task slots, `spark.skewagg.skew.taskSlots=64`: its makespan@64 is what "
        "a 64-slot cluster would see, its wall time is this 2-core machine running a plan made "
        "for 64); a variant ending -aqe-off (window scenarios) is that variant with adaptive "
        "execution off (`spark.sql.adaptive.enabled=false`), compared with vanilla-aqe-off; "
        "its rewritten column says skewagg's operator was in the plan, which without adaptive "
        "execution it is on UNIFORM data too (it finds no skewed partition when the shuffle "
        "has run and runs Spark's window)." + before_task_slots(rows, report["when"]),
        "",
        "vs vanilla: the ratio of the medians (over vanilla-aqe-off for a -aqe-off variant), "
        "then in brackets the lowest and highest ratio within one repeat.",
        "",
        "Task columns are the hot stage (the stage holding the query's longest task) of the "
        "last run. Makespan@N: every stage's measured task durations list-scheduled onto N "
        "slots, summed over stages: what the same tasks would take on N cores; the median of "
        "the runs. Files are read in 2MB splits (many map tasks, as on a cluster), except in "
        "join-default-splits: the join query at Spark's default split size (128MB; 2 map tasks "
        "per fact table on 2 cores). unique-key-join (TPC-H Q12's shape): the aggregates read "
        "only dim, joined on its unique key (a local aggregate of dim has nothing to merge), "
        "grouped by a column of the fact rows with `i < 5`; distinct-many and "
        "distinct-many-repartition: `countDistinct(i)` grouped by k after a join to a dimension "
        "of 400,000 keys or after `repartition(k)`, on rows x 2/5 rows (8M) with i over 100,000 "
        "values, in skewed data 30% on key 0 (about 100,000 distinct values of i), the rest "
        "over the 400,000 keys; three-way-join (TPC-H Q3's shape): "
        "line items (the fact rows with `v > 10`, about 3.6 per order `(k, i % 5)`) joined to "
        "the orders of one segment in five (dim exploded to 5 orders per key, through a third "
        "table), grouped by order and dim's column, summing `v * (1 - i / 100)`. key-shapes: "
        "the repartition query on keys of four shapes (unique: every key once; few: 100 keys; "
        "hot-unique and hot-few: 30% on one key, the others unique or over 100 keys). tpch-q12: "
        "TPC-H Q12's text on TPC-H-like orders (rows x 3/40) and line items (rows x 3/10), "
        "in skewed data 30% of the line items of one order. demo: `make demo`'s join query on "
        "its own rows (8M computed as read, 64 partitions, 30% on one key, 1M keys).",
        "",
        "| scenario | data | variant | wall s | vs vanilla | hot task ms | median task ms "
        "| makespan@64 s | makespan@512 s | rewritten | equal |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        r.setdefault("rewritten", None)
        vanilla = by.get((r["scenario"], r["data"], baseline(r["variant"])))
        ratio = wall_ratio(r, vanilla) if vanilla else ""
        lines.append(
            f"| {r['scenario']} | {r['data']} | {r['variant']} | {r['wall_s']:.2f} | {ratio} "
            f"| {r['hot_task_ms']} | {r['median_task_ms']:.0f} | {r['makespan64_ms'] / 1000:.2f} "
            f"| {r['makespan512_ms'] / 1000:.2f} "
            f"| {'?' if r['rewritten'] is None else 'yes' if r['rewritten'] else ''} "
            f"| {'yes' if r['equal_to_vanilla'] else 'NO'} |")
    ratios = makespan_ratios(by)
    return "\n".join(lines + (ratios if ratios[5:] else [])) + "\n"


def render_lines(report: dict, suffix: str = "") -> str:
    """The same scenarios measured on each Spark line that has a report of as many rows (named
    with the same `suffix`), side by side: the wall time against that line's vanilla, and
    makespan@64, per variant."""
    reports = {report["line"]: report}
    for path in RESULTS.glob(f"bench-rows{report['rows']}{suffix}-spark*.json"):
        other = json.loads(path.read_text())
        reports.setdefault(other.get("line", "?"), other)
    if len(reports) < 2:
        return ""
    lines_ = sorted(reports, key=lambda l: tuple(int(p) for p in l.split(".")))
    header = ["", "### Spark lines side by side" if suffix else "## Spark lines side by side", "",
              "Each line against its own vanilla Spark (skewagg off), from its report in "
              "benchmarks/results (" + ", ".join(
                  f"{l}: Spark {reports[l].get('spark', l)}, {reports[l]['when']}"
                  for l in lines_) + ").", "",
              "| scenario | data | variant | " + " | ".join(
                  f"{l} wall vs vanilla | {l} makespan@64 s" for l in lines_) + " |",
              "|---|---|---|" + "---|---|" * len(lines_)]
    by_line = {l: {(r["scenario"], r["data"], r["variant"]): r for r in reports[l]["results"]}
               for l in lines_}
    rows = []
    for r in report["results"]:
        key = (r["scenario"], r["data"], r["variant"])
        cells = []
        for l in lines_:
            got = by_line[l].get(key)
            vanilla = by_line[l].get((key[0], key[1], baseline(key[2])))
            cells.append(wall_ratio(got, vanilla) if got and vanilla else "")
            cells.append(f"{got['makespan64_ms'] / 1000:.2f}" if got else "")
        rows.append(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(cells) + " |")
    return "\n".join(header + rows) + "\n"


if __name__ == "__main__":
    sys.exit(main())
