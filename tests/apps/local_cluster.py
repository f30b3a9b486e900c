"""A PySpark app for the tests that need separate executor JVMs (local-cluster), run once for all
of them: starting the cluster's JVMs was most of each one's time when each had its app. Runs each
part under its settings, one after another, and prints one JSON line with every part's report:
``executors`` (tests/apps/report_active.py: both executor JVMs load the jar), ``percentiles``
(tests/apps/single_key_percentile.py), ``windows`` (tests/apps/window_split.py),
``partial_states`` (tests/apps/partial_states.py)."""

import json
from typing import Any, Callable, Dict, List, Tuple

from partial_states import STATES_CONF, partial_states
from pyspark.sql import SparkSession
from report_active import active
from single_key_percentile import SHUFFLE_CONF, percentiles
from window_split import SPLIT_CONF, windows

# First the executors' check, on the executor JVMs as they started.
PARTS: List[Tuple[str, Callable[[SparkSession], Dict[str, Any]], Dict[str, str]]] = [
    ("executors", active, {}),
    ("percentiles", percentiles, SHUFFLE_CONF),
    ("windows", windows, SPLIT_CONF),
    ("partial_states", partial_states, STATES_CONF),
]

spark = SparkSession.builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
report: Dict[str, Any] = {}
for name, part, settings in PARTS:
    for key, value in settings.items():
        spark.conf.set(key, value)
    report[name] = part(spark)
    for key in ("spark.sql.adaptive.enabled", "spark.skewagg.enabled", *settings):
        spark.conf.unset(key)
print("REPORT " + json.dumps(report))
spark.stop()
