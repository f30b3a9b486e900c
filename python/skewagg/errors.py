"""Exceptions raised by the skewagg package. Each message says what is wrong and how to fix it."""

from __future__ import annotations


class SkewAggError(Exception):
    """Base class of every skewagg error."""


class UnsupportedSparkVersionError(SkewAggError):
    """No bundled jar matches the running Spark's major.minor line."""


class SparkNotFoundError(SkewAggError):
    """No Spark to pick a jar for: no SparkContext running, no ``$SPARK_HOME`` holding Spark's
    jars, no importable pyspark."""


class JarNotFoundError(SkewAggError):
    """The package has no jar at all (installed from a checkout without building it)."""


class NotLoadedError(SkewAggError):
    """The extension is not loaded in the session's JVM."""


class ColumnNotFoundError(SkewAggError, ValueError):
    """A column named in a skewagg call is not a column of the DataFrame."""


class ConnectNotSupportedError(SkewAggError):
    """A call needs the driver's JVM, which a Spark Connect client cannot reach; the message
    names what to use instead."""
