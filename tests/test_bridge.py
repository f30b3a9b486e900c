"""Python reaches skewagg's JVM code through one object, io.skewagg.PythonBridge."""

import re
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import skewagg
from plans import Plan
from skewagg._bridge import BRIDGE_CLASS, bridge

pytestmark = pytest.mark.packaging


def test_python_names_no_other_jvm_class_of_skewagg() -> None:
    package = Path(skewagg.__file__).parent
    tests = Path(__file__).parent
    internal = re.compile(r"org\.apache\.spark\.sql\.skewagg|_jvm\.")
    files = [*package.glob("*.py"), *tests.glob("*.py"), *tests.glob("apps/*.py")]
    offenders = [
        f"{path.name}:{number}: {line.strip()}"
        for path in sorted(files) if path.name not in ("_bridge.py", "test_bridge.py")
        for number, line in enumerate(path.read_text().splitlines(), 1) if internal.search(line)
    ]
    assert offenders == []


def test_the_bridge_answers(spark: SparkSession) -> None:
    # A missing class would be a py4j JavaPackage, which is not callable.
    assert BRIDGE_CLASS == "io.skewagg.PythonBridge"
    plan = spark.range(3)._jdf.queryExecution().executedPlan()
    assert str(bridge(spark).operatorLines(plan)) == ""
    assert "no aggregate" in str(bridge(spark).explain(plan))


def test_operators_are_the_executed_plan_with_the_input_each_reads(spark: SparkSession) -> None:
    saved = spark.conf.get("spark.sql.adaptive.enabled")
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        df = spark.range(100).groupBy((F.col("id") % 3).alias("k")).agg(F.sum("id"))
        df.collect()
        plan = Plan.of(df)
    finally:
        spark.conf.set("spark.sql.adaptive.enabled", saved)
    aggregates = plan.named("HashAggregateExec")
    assert [a.partial for a in aggregates] == [False, True], plan
    exchange, = plan.named("ShuffleExchangeExec")
    assert exchange.origin == "ENSURE_REQUIREMENTS"
    assert plan.reads(aggregates[0]) == [exchange]
    assert plan.reads(exchange) == [aggregates[1]]
    assert plan.operators[0].parent == -1
    assert not plan.has("SkewAggLocalStageExec") and not plan.partial_below_join()
