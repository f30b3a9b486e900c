"""Starts a session the way the first argument says, then asks skewagg to enable itself.
Prints one JSON line: whether it was loaded and the error message the user would see."""

import json
import sys

from pyspark.sql import SparkSession

import skewagg

how = sys.argv[1]
builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
if how == "plain":
    spark = builder.getOrCreate()
elif how == "configure-too-late":
    SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    spark = skewagg.configure(SparkSession.builder).getOrCreate()
elif how == "extension-without-jar":
    spark = builder.config("spark.sql.extensions", skewagg.EXTENSION_CLASS).getOrCreate()
elif how == "jar-of-another-scala":
    # A bundled jar of another Scala binary than this pyspark's (any line: the Scala is checked
    # first, since such a jar cannot load at all).
    from skewagg._jars import bundled_jars, running_spark

    running = running_spark()
    other = next(path for (_, scala), path in sorted(bundled_jars().items())
                 if scala != running.scala)
    spark = (builder.config("spark.jars", str(other))
             .config("spark.sql.extensions", skewagg.EXTENSION_CLASS).getOrCreate())
else:
    raise SystemExit(f"unknown mode {how}")
spark.sparkContext.setLogLevel("ERROR")
result = {"loaded": skewagg.is_loaded(spark), "active": skewagg.is_active(spark)}
try:
    skewagg.enable(spark)
    result["error"] = None
except skewagg.NotLoadedError as exc:
    result["error"] = str(exc)
print("REPORT " + json.dumps(result))
spark.stop()
