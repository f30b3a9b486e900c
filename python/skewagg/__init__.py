"""skewagg: fast keyed aggregations on skewed keys for Spark SQL.

The work happens in a Spark SQL extension (a jar bundled with this package). This module puts
that jar on a session and switches it on and off::

    from pyspark.sql import SparkSession
    import skewagg

    spark = skewagg.configure(SparkSession.builder).getOrCreate()
    assert skewagg.is_active(spark)
"""

from skewagg._jars import supported_spark_lines
from skewagg.advisor import AdviceReport, advise
from skewagg.errors import (
    ColumnNotFoundError,
    ConnectNotSupportedError,
    JarNotFoundError,
    NotLoadedError,
    SkewAggError,
    SparkNotFoundError,
    UnsupportedSparkVersionError,
)
from skewagg.explain import explain, explain_text
from skewagg.session import (
    BLOCK_SKEW_FACTOR_KEY,
    COST_EVALUATOR_CLASS,
    COST_EVALUATOR_KEY,
    ENABLED_KEY,
    EXPLAIN_GENERATOR_CLASS,
    EXPLAIN_PROVIDERS_KEY,
    EXTENSION_CLASS,
    configure,
    disable,
    enable,
    executor_builds,
    is_active,
    is_loaded,
    jar_path,
    loaded_version,
    require_loaded,
    server_flags,
)
from skewagg.skew_report import SkewReport, analyze
from skewagg.stage_report import StageReport, stage_report
from skewagg.version import __version__

__all__ = [
    "AdviceReport",
    "BLOCK_SKEW_FACTOR_KEY",
    "COST_EVALUATOR_CLASS",
    "COST_EVALUATOR_KEY",
    "ENABLED_KEY",
    "EXPLAIN_GENERATOR_CLASS",
    "EXPLAIN_PROVIDERS_KEY",
    "EXTENSION_CLASS",
    "ColumnNotFoundError",
    "ConnectNotSupportedError",
    "JarNotFoundError",
    "NotLoadedError",
    "SkewAggError",
    "SkewReport",
    "SparkNotFoundError",
    "StageReport",
    "UnsupportedSparkVersionError",
    "__version__",
    "advise",
    "analyze",
    "configure",
    "disable",
    "enable",
    "executor_builds",
    "explain",
    "explain_text",
    "is_active",
    "is_loaded",
    "jar_path",
    "loaded_version",
    "require_loaded",
    "server_flags",
    "stage_report",
    "supported_spark_lines",
]
