"""What a new user runs after `pip install skewagg-*.whl` into a venv that has some pyspark 4.x:
configure(), a skewed join + groupBy and a hot-key percentile, each with skewagg off and on
(adaptive execution on). Exits non-zero unless both are rewritten and return the same rows as
with skewagg off; prints the executed plans (build/check-wheel runs it once per Spark line)."""

import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import skewagg

builder = (SparkSession.builder.master("local[2]").appName("skewagg-wheel-smoke")
           .config("spark.ui.enabled", "false")
           .config("spark.ui.showConsoleProgress", "false")
           .config("spark.sql.shuffle.partitions", "16")
           .config("spark.sql.autoBroadcastJoinThreshold", "-1")
           .config("spark.skewagg.skew.minPartitionSize", "4k")
           .config("spark.skewagg.skew.minSplitSize", "2k"))
spark = skewagg.configure(builder).getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
print(f"pyspark {spark.version}, {skewagg.loaded_version(spark)}, jar {skewagg.jar_path()}")

fact = spark.range(0, 200_000).select(
    F.when(F.col("id") % 10 < 3, F.lit(0)).otherwise(F.col("id") % 997).alias("k"),
    (F.col("id") % 1000).alias("v"))  # integral: sums are exact in any order
dim = spark.range(0, 997).select(F.col("id").alias("k"), (F.col("id") % 10).alias("attr"))
QUERIES = {
    "skewed join -> groupBy": (lambda: fact.join(dim, "k").groupBy("k").agg(F.sum("v")),
                               "SkewAggLocalStage"),
    "hot-key percentile": (lambda: fact.groupBy("k").agg(F.percentile("v", F.lit(0.5))),
                           "SingleKeyAggregate"),
}
failed = False
for name, (query, operator) in QUERIES.items():
    rows = {}
    for on in (False, True):
        (skewagg.enable if on else skewagg.disable)(spark)
        df = query()
        rows[on] = sorted(tuple(r) for r in df.collect())
        plan = df._jdf.queryExecution().executedPlan().toString()
        print(f"--- {name}, skewagg {'on' if on else 'off'}:\n{plan.split('== Initial')[0]}")
    planned = operator in plan
    equal = rows[False] == rows[True]
    print(f"=== {name}: {operator} {'in' if planned else 'NOT in'} the plan, rows "
          f"{'equal' if equal else 'DIFFERENT'} ({len(rows[True])} rows)")
    failed = failed or not (planned and equal)
spark.stop()
sys.exit(1 if failed else 0)
