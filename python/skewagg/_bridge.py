"""The one door through which Python calls skewagg's JVM code (``io.skewagg.PythonBridge``, over
py4j), and the check that keeps Spark Connect clients, which have no driver JVM, from it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from skewagg.errors import ConnectNotSupportedError

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

BRIDGE_CLASS = "io.skewagg.PythonBridge"


def is_connect(spark: "SparkSession") -> bool:
    """Whether ``spark`` is a Spark Connect client session (its server runs the queries)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def bridge(spark: SparkSession, instead: str = "") -> Any:
    """The JVM's ``io.skewagg.PythonBridge`` (a py4j object) of ``spark``'s driver.

    Raises :class:`ConnectNotSupportedError` on a Spark Connect session, whose client has no
    driver JVM, naming ``instead``: what to use there.
    """
    if is_connect(spark):
        raise ConnectNotSupportedError(
            "this call reaches into the Spark driver's JVM (py4j), which a Spark Connect client "
            f"does not have{': ' + instead if instead else '.'}")
    return spark.sparkContext._jvm.io.skewagg.PythonBridge  # type: ignore[union-attr]


def driver_scala_version(spark: SparkSession) -> Optional[str]:
    """The Scala version of ``spark``'s driver JVM (``"2.12.18"``), read through py4j without
    skewagg's classes (to say why they did not load); None when it cannot be read."""
    try:
        context = spark.sparkContext
    except Exception:  # a Connect client has no driver JVM to ask
        return None
    return context_scala_version(context)


def context_scala_version(context: SparkContext) -> Optional[str]:
    """The Scala version of a running SparkContext's JVM; None when it cannot be read."""
    try:
        jvm: Any = context._jvm
        return str(jvm.scala.util.Properties.versionNumberString())
    except Exception:
        return None
