"""What a new user runs after `pip install skewagg-*.whl` into a venv that has some PySpark 3.5 or
4.x (pip's, or a cluster's on PYTHONPATH): configure(), then with skewagg off and on (adaptive
execution on) a skewed join + groupBy, a repartition(k) + groupBy, a SKEW_AGG-hinted SQL
aggregate, a NO_SKEW_AGG-hinted one whose output is partly pruned (left alone), a hot-key
percentile and a window over a hot key; then `python -m skewagg advise` on the event log Spark
wrote with its default settings (zstd on Spark 4). Exits non-zero unless each query is rewritten
(or left alone) as expected and returns the same rows as with skewagg off, the jar is that of the
Spark that ran, and the advisor read the log; prints the executed plans (build/check-dist runs
it in each of its fresh virtualenvs; with --join-only, the skewed join alone)."""

import glob
import os
import subprocess
import sys
import tempfile

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

import skewagg

event_logs = tempfile.mkdtemp(prefix="skewagg-smoke-events-")
builder = (SparkSession.builder.master("local[2]").appName("skewagg-wheel-smoke")
           .config("spark.eventLog.enabled", "true")  # codec and compression: Spark's defaults
           .config("spark.eventLog.dir", "file://" + event_logs)
           .config("spark.ui.enabled", "false")
           .config("spark.ui.showConsoleProgress", "false")
           .config("spark.sql.shuffle.partitions", "16")
           .config("spark.sql.autoBroadcastJoinThreshold", "-1")
           .config("spark.skewagg.skew.minPartitionSize", "4k")
           .config("spark.skewagg.skew.minSplitSize", "2k")
           .config("spark.skewagg.skew.taskSlots", "64")
           .config("spark.skewagg.window.split.minKeyRows", "100"))
spark = skewagg.configure(builder).getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
print(f"pyspark {spark.version}, {skewagg.loaded_version(spark)}, jar {skewagg.jar_path()}")
line = ".".join(spark.version.split(".")[:2])
failed = f"skewagg-spark{line}_" not in os.path.basename(skewagg.jar_path())
if failed:
    print(f"=== the jar is not Spark {line}'s: {skewagg.jar_path()}")

fact = spark.range(0, 200_000).select(
    F.when(F.col("id") % 10 < 3, F.lit(0)).otherwise(F.col("id") % 997).alias("k"),
    (F.col("id") % 1000).alias("v"))  # integral: sums are exact in any order
dim = spark.range(0, 997).select(F.col("id").alias("k"), (F.col("id") % 10).alias("attr"))
fact.createOrReplaceTempView("fact")
dim.createOrReplaceTempView("dim")
HINTED = ("SELECT {hint} f.k, sum(f.v) AS s, count(*) AS n FROM fact f JOIN dim d ON f.k = d.k "
          "GROUP BY f.k")
ordered = spark.range(0, 200_000, 1, 8).select(  # o: unique, so a running sum has one result
    F.when(F.col("id") % 10 < 3, F.lit(0)).otherwise(F.col("id") % 997).alias("k"),
    ((F.col("id") * 7919) % 200_000).alias("o"), (F.col("id") % 1000).alias("v"))
by_o = Window.partitionBy("k").orderBy("o")
# name: (query, the operator expected in skewagg's plan, or None: the plan is Spark's own)
QUERIES = {
    "skewed join -> groupBy": (lambda: fact.join(dim, "k").groupBy("k").agg(F.sum("v")),
                               "SkewAggLocalStage"),
    "repartition(k) -> groupBy": (lambda: fact.repartition("k").groupBy("k").agg(F.sum("v")),
                                  "FlushingPartialAggregate"),
    "SKEW_AGG SQL aggregate": (lambda: spark.sql(HINTED.format(hint="/*+ SKEW_AGG */")),
                               "SkewAggLocalStage"),
    "NO_SKEW_AGG, an output pruned": (
        lambda: spark.sql(f"SELECT k, s FROM ({HINTED.format(hint='/*+ NO_SKEW_AGG */')})"),
        None),
    "hot-key percentile": (lambda: fact.groupBy("k").agg(F.percentile("v", F.lit(0.5))),
                           "HotKeySplitAggregate"),
    "window over a hot key": (
        lambda: ordered.select("k", "o", F.sum("v").over(by_o).alias("running")),
        "HotKeySplitWindow"),
}
SKEWAGG_OPERATORS = ("SkewAggLocalStage", "FlushingPartialAggregate", "SingleKeyAggregate",
                     "HotKeySplitAggregate", "HotKeySplitWindow")
if "--join-only" in sys.argv[1:]:
    QUERIES = dict(list(QUERIES.items())[:1])
for name, (query, operator) in QUERIES.items():
    rows = {}
    for on in (False, True):
        (skewagg.enable if on else skewagg.disable)(spark)
        df = query()
        rows[on] = sorted(tuple(r) for r in df.collect())
        plan = df._jdf.queryExecution().executedPlan().toString()
        print(f"--- {name}, skewagg {'on' if on else 'off'}:\n{plan.split('== Initial')[0]}")
    if operator is None:
        planned = not any(op in plan for op in SKEWAGG_OPERATORS)
        said = "left alone" if planned else "REWRITTEN"
    else:
        planned = operator in plan
        said = f"{operator} {'in' if planned else 'NOT in'} the plan"
    equal = rows[False] == rows[True]
    print(f"=== {name}: {said}, rows {'equal' if equal else 'DIFFERENT'} ({len(rows[True])} rows)")
    failed = failed or not (planned and equal)
spark.stop()

logs = glob.glob(os.path.join(event_logs, "*"))
# A rolling log (Spark 4's default) is a directory of event files.
files = [f for log in logs for f in (glob.glob(os.path.join(log, "events_*")) or [log])]
advice = subprocess.run([sys.executable, "-m", "skewagg", "advise", *logs, "--task-slots", "64"],
                        capture_output=True, text=True)
read = advice.returncode == 0 and "skewagg advisor: 1 application(s)" in advice.stdout
print(f"=== advise on {[os.path.relpath(f, event_logs) for f in files]}: "
      f"{'read' if read else 'FAILED'} (exit {advice.returncode})\n{advice.stdout[-2000:]}"
      f"{advice.stderr[-2000:]}")
if line >= "4." and not all(f.endswith(".zstd") for f in files):
    print("=== Spark 4's default event log codec is zstd; the log is not zstd-compressed")
    read = False
sys.exit(1 if failed or not read else 0)
