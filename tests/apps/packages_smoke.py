"""skewagg from its Maven coordinates alone, as a Scala, Java or plain PySpark user loads it: no
skewagg Python package, the jar fetched by Spark from a Maven repository.
  spark-submit --packages io.skewagg:... --conf spark.sql.extensions=... packages_smoke.py
  python packages_smoke.py io.skewagg:... [IVY_DIR]   (spark.jars.packages on the builder)
Runs a skewed join + groupBy with skewagg off and on (adaptive execution on) and exits non-zero
unless skewagg is loaded, rewrites it (SkewAggLocalStage) and returns the same rows as when off.
build/check-dist runs it after make publish-local."""

import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

builder = (SparkSession.builder.master("local[2]").appName("skewagg-packages-smoke")
           .config("spark.ui.enabled", "false")
           .config("spark.ui.showConsoleProgress", "false")
           .config("spark.sql.shuffle.partitions", "16")
           .config("spark.sql.autoBroadcastJoinThreshold", "-1"))
if len(sys.argv) > 1:
    builder = (builder.config("spark.jars.packages", sys.argv[1])
               .config("spark.sql.extensions", "io.skewagg.SkewAggExtensions"))
if len(sys.argv) > 2:
    builder = builder.config("spark.jars.ivy", sys.argv[2])  # no artifact cached before
spark = builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
print("loaded:", spark.sql("SELECT skewagg_version()").head()[0])

fact = spark.range(0, 200_000).select(
    F.when(F.col("id") % 10 < 3, F.lit(0)).otherwise(F.col("id") % 997).alias("k"),
    (F.col("id") % 1000).alias("v"))
dim = spark.range(0, 997).select(F.col("id").alias("k"), (F.col("id") % 10).alias("attr"))
rows = {}
for on in ("false", "true"):
    spark.conf.set("spark.skewagg.enabled", on)
    df = fact.join(dim, "k").groupBy("k").agg(F.sum("v").alias("s"))
    rows[on] = sorted(tuple(r) for r in df.collect())
    plan = df._jdf.queryExecution().executedPlan().toString()
rewritten = "SkewAggLocalStage" in plan
equal = rows["false"] == rows["true"]
print(f"=== skewed join -> groupBy: {'rewritten' if rewritten else 'NOT rewritten'}, rows "
      f"{'equal' if equal else 'DIFFERENT'} ({len(rows['true'])} rows)")
spark.stop()
sys.exit(0 if rewritten and equal else 1)
