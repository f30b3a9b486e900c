"""Python reaches skewagg's JVM code through one object, io.skewagg.PythonBridge."""

import re
from pathlib import Path

from pyspark.sql import SparkSession

import skewagg
from skewagg._bridge import BRIDGE_CLASS, bridge


def test_python_names_no_other_jvm_class_of_skewagg() -> None:
    package = Path(skewagg.__file__).parent
    internal = re.compile(r"org\.apache\.spark\.sql\.skewagg|_jvm\.")
    offenders = [
        f"{path.name}:{number}: {line.strip()}"
        for path in sorted(package.glob("*.py")) if path.name != "_bridge.py"
        for number, line in enumerate(path.read_text().splitlines(), 1) if internal.search(line)
    ]
    assert offenders == []


def test_the_bridge_answers(spark: SparkSession) -> None:
    # A missing class would be a py4j JavaPackage, which is not callable.
    assert BRIDGE_CLASS == "io.skewagg.PythonBridge"
    plan = spark.range(3)._jdf.queryExecution().executedPlan()
    assert str(bridge(spark).operatorLines(plan)) == ""
    assert "no aggregate" in str(bridge(spark).explain(plan))
