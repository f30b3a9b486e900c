"""Whether skewagg is loaded in a session, and why not: what every module that calls the JVM
checks first."""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional

from skewagg.errors import NotLoadedError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

EXTENSION_CLASS = "io.skewagg.SkewAggExtensions"
"""The class to list in ``spark.sql.extensions``."""

VERSION_FUNCTION = "skewagg_version"
"""A SQL function the extension registers; its presence shows the extension is loaded."""


def split_list(value: Optional[str]) -> List[str]:
    """The items of a comma-separated setting such as ``spark.jars``."""
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def is_loaded(spark: "SparkSession") -> bool:
    """True when the skewagg extension is registered in ``spark`` (whether enabled or not)."""
    return bool(spark.catalog.functionExists(VERSION_FUNCTION))


def _scala_mismatch(spark: "SparkSession") -> Optional[str]:
    """Why a skewagg jar in ``spark.jars`` cannot load: built for another Scala binary than the
    driver's (a jar of the wrong Scala fails to load, and Spark skips the extension)."""
    from skewagg._bridge import driver_scala_version
    from skewagg._jars import JAR_NAME, scala_binary

    running = driver_scala_version(spark)
    if running is None:
        return None
    for jar in split_list(spark.conf.get("spark.jars", None)):
        match = JAR_NAME.match(jar.rsplit("/", 1)[-1])
        if match and match.group("scala") != scala_binary(running):
            return (
                f"spark.jars lists {jar}, built for Scala {match.group('scala')}, but this Spark "
                f"runs Scala {running}: a jar of another Scala binary does not load. Use the jar "
                f"for Scala {scala_binary(running)}: skewagg.configure(SparkSession.builder, "
                f"scala_version='{scala_binary(running)}'), or with spark-submit --jars "
                f"\"$(python -m skewagg jar-path --scala-version {scala_binary(running)})\"."
            )
    return None


def is_connect(spark: "SparkSession") -> bool:
    """Whether ``spark`` is a Spark Connect client session (its server runs the queries)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _why_not_loaded_on_server() -> str:
    from skewagg import server_flags

    return (
        "this is a Spark Connect session, and its server was started without skewagg "
        "(extensions and jars are fixed when the server's application starts; a client cannot "
        "add them, and spark.stop() on the client does not restart the server). Start the "
        f"server with: {' '.join(server_flags())} (python -m skewagg server-conf prints them; "
        "--spark-version picks the jar of the server's Spark)."
    )


def _why_not_loaded(spark: "SparkSession") -> str:
    if is_connect(spark):
        return _why_not_loaded_on_server()
    mismatch = _scala_mismatch(spark)
    if mismatch is not None:
        return mismatch
    extensions = split_list(spark.conf.get("spark.sql.extensions", None))
    if EXTENSION_CLASS not in extensions:
        return (
            f"spark.sql.extensions does not list {EXTENSION_CLASS}. Create the session with "
            "skewagg.configure(SparkSession.builder).getOrCreate(), or pass "
            f"--conf spark.sql.extensions={EXTENSION_CLASS} to spark-submit. If a session was "
            "already running when skewagg.configure(...) was called, getOrCreate() returned it "
            "unchanged (extensions and jars are fixed when the SparkContext starts): call "
            "spark.stop() first."
        )
    return (
        f"spark.sql.extensions lists {EXTENSION_CLASS}, but the class did not load in the "
        "driver JVM, so Spark skipped it with only a warning in its log. Usually the SparkContext "
        "was started before skewagg.configure(...) (spark.jars is read only at start-up): call "
        "spark.stop() and create the session again with skewagg.configure(SparkSession.builder)"
        ".getOrCreate(). With spark-submit, pass --jars \"$(python -m skewagg jar-path)\". "
        "If the jar was built for another Spark line, session start-up fails with a message "
        "naming the right one."
    )


def require_loaded(spark: "SparkSession") -> None:
    """Raises :class:`NotLoadedError`, saying how to fix it, unless skewagg is loaded in
    ``spark``."""
    if not is_loaded(spark):
        raise NotLoadedError(
            f"skewagg is not loaded in this Spark session: {_why_not_loaded(spark)}")
