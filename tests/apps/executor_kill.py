"""A PySpark app for the executor-failure tests (tests/test_executor_failures.py), run with
spark-submit on a local-cluster of two executor JVMs.

Usage: executor_kill.py QUERY TOKEN_DIR ADAPTIVE, QUERY one of join, repartition, percentile,
ADAPTIVE a comma-separated list of true/false.

For each adaptive execution setting, it runs QUERY (a query skewagg rewrites) three times: with
skewagg off and nobody killed, then with skewagg on while a Python UDF kills its own executor JVM
once, in the query's local (map) stage, then again with the kill in its final (reduce) stage.
The kill is deterministic, not timed: the first call of the UDF anywhere in that stage (on the
first attempt, as TaskContext says) creates a token file exclusively and SIGKILLs the executor
JVM it runs under, found by walking /proc up from the Python worker (a Python worker's parent is
pyspark's daemon, not the JVM). The token file makes it happen exactly once. Prints one JSON line
with the rows of every run, the executed plans, the killed pids and what the status tracker saw
(failed tasks, stage attempts) for every killed run.
"""

import json
import os
import signal
import sys
import time
from typing import Callable, Dict, List

from pyspark import SparkContext, TaskContext
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType

import skewagg
from plans import reported

QUERY, TOKEN_DIR = sys.argv[1], sys.argv[2]
ADAPTIVE = [mode == "true" for mode in sys.argv[3].split(",")]


def executor_pid() -> int:
    """The pid of the executor JVM this Python worker runs under (an ancestor process)."""
    pid = os.getpid()
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"CoarseGrainedExecutorBackend" in f.read():
                return pid
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])  # field 4: the parent pid
    raise RuntimeError("no executor JVM among this Python worker's ancestors")


def killer(token: str) -> Callable[[Column], Column]:
    """A UDF returning true that, on its first call in a first task attempt, kills its executor
    JVM once (whoever creates `token` first). A token that exists already disarms it."""

    def kill_once(_value: object) -> bool:
        context = TaskContext.get()
        if context is not None and context.attemptNumber() == 0:
            try:
                fd = os.open(token, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return True
            pid = executor_pid()
            os.write(fd, json.dumps({"pid": pid, "stage": context.stageId(),
                                     "partition": context.partitionId()}).encode())
            os.close(fd)
            os.kill(pid, signal.SIGKILL)
        return True

    return F.udf(kill_once, BooleanType()).asNondeterministic()


def fact(spark: SparkSession) -> DataFrame:
    # 30% of the rows on key 0, NULL values and keys here and there; 6 map tasks.
    return spark.range(0, 60000, 1, 6).select(
        F.when(F.col("id") % 10 < 3, F.lit(0))
        .when(F.col("id") % 211 == 5, F.lit(None))
        .otherwise(F.col("id") % 97).alias("k"),
        F.when(F.col("id") % 101 == 7, F.lit(None))
        .otherwise((F.col("id") * 7919) % 1000 / 4.0).alias("v"),
    )


def dim(spark: SparkSession) -> DataFrame:
    # Keys below 30 twice: those fact rows join twice.
    base = spark.range(0, 97, 1, 2).select(F.col("id").alias("k"), (F.col("id") % 7).alias("attr"))
    return base.union(base.where(F.col("k") < 30))


def query(spark: SparkSession, kill_map: Callable, kill_final: Callable) -> DataFrame:
    local = fact(spark).where(kill_map(F.col("k")))
    if QUERY == "join":
        aggregated = local.join(dim(spark), "k").groupBy("k", "attr").agg(
            F.sum("v").alias("s"), F.count("*").alias("n"))
    elif QUERY == "repartition":
        aggregated = local.repartition("k").groupBy("k").agg(
            F.sum("v").alias("s"), F.count("*").alias("n"), F.max("v").alias("mx"))
    elif QUERY == "percentile":
        aggregated = local.groupBy("k").agg(
            F.percentile("v", [0.1, 0.5, 0.9]).alias("p"), F.median("v").alias("m"),
            F.count("*").alias("n"))
    else:
        raise ValueError(f"unknown query {QUERY}")
    return aggregated.withColumn("alive", kill_final(F.col("n")))


def wait_for_executors(sc: SparkContext, count: int, timeout_s: float = 180.0) -> None:
    """Waits until `count` executors are registered (a killed one is replaced by a new JVM)."""
    deadline = time.monotonic() + timeout_s
    tracker = sc._jsc.sc().statusTracker()  # PySpark's StatusTracker lacks getExecutorInfos
    while len(tracker.getExecutorInfos()) - 1 < count:  # minus the driver
        if time.monotonic() > deadline:
            raise TimeoutError(f"fewer than {count} executors after {timeout_s} s")
        time.sleep(0.2)


def failures_seen(sc: SparkContext, group: str) -> Dict[str, int]:
    """What the status tracker recorded for the jobs of `group`."""
    tracker = sc.statusTracker()
    stages = []
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        if info is not None:
            stages.extend(s for s in (tracker.getStageInfo(i) for i in info.stageIds) if s)
    return {
        "failedTasks": sum(s.numFailedTasks for s in stages),
        "maxStageAttempt": max((s.currentAttemptId for s in stages), default=-1),
    }


spark = SparkSession.builder.config("spark.sql.shuffle.partitions", "6") \
    .config("spark.sql.autoBroadcastJoinThreshold", "-1").getOrCreate()
sc = spark.sparkContext
sc.setLogLevel("OFF")  # a killed executor makes the driver log lost-task warnings
disarmed = os.path.join(TOKEN_DIR, "disarmed")
open(disarmed, "w").close()

result: Dict[str, object] = {"rows": {}, "plans": {}, "kills": {}, "seen": {}}
for adaptive in ADAPTIVE:
    spark.conf.set("spark.sql.adaptive.enabled", str(adaptive).lower())
    runs = [("off", False, disarmed, disarmed), ("map", True, "map", disarmed),
            ("final", True, disarmed, "final")]
    for name, on, map_token, final_token in runs:
        run = f"{name},adaptive={adaptive}"

        def token(t: str, adaptive: bool = adaptive) -> str:
            return t if t == disarmed else os.path.join(TOKEN_DIR, f"{t}-{adaptive}")

        wait_for_executors(sc, 2)
        (skewagg.enable if on else skewagg.disable)(spark)
        sc.setJobGroup(run, run)
        df = query(spark, killer(token(map_token)), killer(token(final_token)))
        rows: List[str] = sorted(repr(tuple(r)) for r in df.collect())
        result["rows"][run] = rows
        result["plans"][run] = reported(df)
        result["seen"][run] = failures_seen(sc, run)
        killed = token(map_token if name == "map" else final_token)
        if killed != disarmed:
            with open(killed) as f:
                result["kills"][run] = json.load(f)
print("REPORT " + json.dumps(result))
spark.stop()
