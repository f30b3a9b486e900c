"""What a new user runs after `pip install skewagg-*.whl` into a venv that has some pyspark 3.5 or
4.x: configure(), then with skewagg off and on (adaptive execution on) a skewed join + groupBy, a
repartition(k) + groupBy, a SKEW_AGG-hinted SQL aggregate, a NO_SKEW_AGG-hinted one whose output
is partly pruned (left alone), a hot-key percentile and a window over a hot key. Exits non-zero
unless each is rewritten (or left alone) as expected and returns the same rows as with skewagg
off; prints the executed plans (build/check-wheel runs it once per Spark line)."""

import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

import skewagg

builder = (SparkSession.builder.master("local[2]").appName("skewagg-wheel-smoke")
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
failed = False
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
sys.exit(1 if failed else 0)
