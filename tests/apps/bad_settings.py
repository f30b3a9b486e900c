"""Starts a skewagg session with the setting given as KEY=VALUE in the first argument (in the
session builder's config, as a job would), runs a query (the second argument, SQL, if given),
and prints one JSON line: the error the user saw, if any, and the query's rows counted."""

import json
import sys

from pyspark.sql import SparkSession

import skewagg

key, value = sys.argv[1].split("=", 1)
builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
result = {"error": None, "count": None}
try:
    spark = skewagg.configure(builder.config(key, value)).getOrCreate()
    query = (spark.sql(sys.argv[2]) if len(sys.argv) > 2
             else spark.range(0, 100).selectExpr("id % 7 AS k").groupBy("k").count())
    result["count"] = query.count()
except Exception as exc:  # what the user sees, whatever its type
    result["error"] = f"{type(exc).__name__}: {exc}"
print("REPORT " + json.dumps(result))
