"""A PySpark app for the dynamic-allocation test: a skewed join then groupBy (key 0 holds 30% of
the rows), run with skewagg off and on, adaptive execution off and on; prints one JSON line with
the four results (rows as strings) and skewagg's explanation of the adaptive run (`spark-submit`
chooses the master, dynamic allocation and the thresholds)."""

import json

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import skewagg

spark = SparkSession.builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
uniform = (F.col("id") * 7919) % 1000
fact = spark.range(0, 40000, 1, 2).select(
    F.when(F.col("id") % 10 < 3, F.lit(0)).otherwise(uniform).alias("k"),
    (F.col("id") / 7.0).alias("v"))
dim = spark.range(0, 1000, 1, 2).select(F.col("id").alias("k"), (F.col("id") % 10).alias("a"))

report = {"rows": {}}
for adaptive in (False, True):
    spark.conf.set("spark.sql.adaptive.enabled", str(adaptive).lower())
    for on in (False, True):
        (skewagg.enable if on else skewagg.disable)(spark)
        df = fact.join(dim, "k").groupBy("k").agg(F.sum(F.col("v") * F.col("a")).alias("s"))
        rows = sorted(f"{r.k}:{r.s:.6f}" for r in df.collect())
        report["rows"][f"skewagg={on},adaptive={adaptive}"] = rows
        if on and adaptive:
            report["explained"] = skewagg.explain_text(df)
print("REPORT " + json.dumps(report))
spark.stop()
