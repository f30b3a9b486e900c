"""The one object through which Python calls skewagg's JVM code (``io.skewagg.PythonBridge``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

BRIDGE_CLASS = "io.skewagg.PythonBridge"


def bridge(spark: SparkSession) -> Any:
    """The JVM's ``io.skewagg.PythonBridge`` (a py4j object) of ``spark``'s driver."""
    return spark.sparkContext._jvm.io.skewagg.PythonBridge  # type: ignore[union-attr]
