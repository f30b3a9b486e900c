"""A session with skewagg: the builder's settings that load it (:func:`configure`, or the
``spark-submit`` flags of :func:`server_flags`), whether it is loaded and why not, and the switch
every rule reads (:func:`enable`, :func:`disable`). Calls into the JVM go through
:mod:`skewagg._bridge`; the extension's SQL functions through :mod:`skewagg._sql`."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Dict, List, Optional

from skewagg._bridge import driver_scala_version, is_connect
from skewagg._jars import (
    JAR_NAME,
    jar_for,
    line_order,
    running_spark_version,
    scala_binary,
    spark_line,
)
from skewagg._sql import task_slots
from skewagg.advisor.skew_rule import DEFAULT_SKEW_FACTOR, SKEW_FACTOR_KEY
from skewagg.errors import NotLoadedError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

EXTENSION_CLASS = "io.skewagg.SkewAggExtensions"
"""The class to list in ``spark.sql.extensions``."""

VERSION_FUNCTION = "skewagg_version"
"""A SQL function the extension registers; its presence shows the extension is loaded."""

ENABLED_KEY = "spark.skewagg.enabled"
"""The runtime switch every skewagg rule checks."""

COST_EVALUATOR_CLASS = "io.skewagg.SkewAggCostEvaluator"
"""Adaptive execution's cost model that knows an exchange of partial aggregates is cheap."""

COST_EVALUATOR_KEY = "spark.sql.adaptive.customCostEvaluatorClass"

BLOCK_SKEW_FACTOR_KEY = "spark.shuffle.accurateBlockSkewedFactor"
"""Spark's setting that keeps a skewed shuffle block's size exact on shuffles of more than 2000
partitions, where Spark otherwise records each map task's blocks at their average size."""

EXPLAIN_GENERATOR_CLASS = "io.skewagg.SkewAggExplainGenerator"
"""The class to list in ``spark.sql.extendedExplainProviders``."""

EXPLAIN_PROVIDERS_KEY = "spark.sql.extendedExplainProviders"

EXPLAIN_PROVIDERS_SINCE = (4, 0)
"""The first Spark line whose EXPLAIN prints the sections of ``EXPLAIN_PROVIDERS_KEY``."""


def split_list(value: Optional[str]) -> List[str]:
    """The items of a comma-separated setting such as ``spark.jars``."""
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def is_loaded(spark: "SparkSession") -> bool:
    """True when the skewagg extension is registered in ``spark`` (whether enabled or not)."""
    return bool(spark.catalog.functionExists(VERSION_FUNCTION))


def _scala_mismatch(spark: "SparkSession") -> Optional[str]:
    """Why a skewagg jar in ``spark.jars`` cannot load: built for another Scala binary than the
    driver's (a jar of the wrong Scala fails to load, and Spark skips the extension)."""
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


def _why_not_loaded_on_server() -> str:
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


def has_explain_providers(spark_version: Optional[str] = None) -> bool:
    """Whether Spark ``spark_version`` (default: the running Spark's) has extended explain
    providers: :func:`explain` works on every line, ``df.explain("extended")``'s skewagg section
    on Spark 4.0+."""
    return line_order(spark_line(spark_version or running_spark_version())) >= \
        EXPLAIN_PROVIDERS_SINCE


def jar_path(spark_version: Optional[str] = None, scala_version: Optional[str] = None) -> str:
    """The path of the bundled jar for ``spark_version`` and Scala ``scala_version``; by default
    those of the Spark that runs here: the SparkContext running in this process, else
    ``$SPARK_HOME``'s, else the imported pyspark's (for another version, the Scala of that Spark
    when it is of the same line, else the line's default build: Scala 2.12 for Spark 3.5, 2.13
    for Spark 4).

    Raises :class:`UnsupportedSparkVersionError` naming the supported Spark lines (or the Scala
    builds of the line) when no jar matches, :class:`SparkNotFoundError` when no Spark is found
    and no version given, and :class:`JarNotFoundError` when the package has no jar at all.
    """
    return str(jar_for(spark_version, scala_version=scala_version))


def _builder_option(builder: "SparkSession.Builder", key: str) -> Optional[str]:
    options = getattr(builder, "_options", None) or {}
    value = options.get(key)
    return None if value is None else str(value)


def _is_remote_client(builder: "SparkSession.Builder") -> bool:
    """Whether ``builder`` makes a Spark Connect client of a server started elsewhere
    (``remote("sc://...")``, or ``$SPARK_REMOTE``); ``remote("local")`` starts a server here,
    whose conf the builder's options are."""
    remote = _builder_option(builder, "spark.remote") or os.environ.get("SPARK_REMOTE", "")
    return remote.startswith("sc://")


def server_flags(spark_version: Optional[str] = None,
                 scala_version: Optional[str] = None) -> List[str]:
    """The ``spark-submit`` arguments that load skewagg into a Spark application, e.g. a Spark
    Connect server (``spark-submit --class org.apache.spark.sql.connect.service.
    SparkConnectServer``): the jar for ``spark_version`` and ``scala_version`` (see
    :func:`jar_path`), the extension, and the settings :func:`configure` sets. They are read when
    the application starts, so a Connect client cannot set them (``python -m skewagg
    server-conf`` prints them)."""
    settings = {
        "spark.sql.extensions": EXTENSION_CLASS,
        COST_EVALUATOR_KEY: COST_EVALUATOR_CLASS,
        BLOCK_SKEW_FACTOR_KEY: DEFAULT_SKEW_FACTOR,
    }
    if has_explain_providers(spark_version):
        settings[EXPLAIN_PROVIDERS_KEY] = EXPLAIN_GENERATOR_CLASS
    flags = ["--jars", jar_path(spark_version, scala_version)]
    for key, value in settings.items():
        flags += ["--conf", f"{key}={value}"]
    return flags


_server_flags_shown = False


def configure(
    builder: "SparkSession.Builder",
    spark_version: Optional[str] = None,
    scala_version: Optional[str] = None,
) -> "SparkSession.Builder":
    """Adds skewagg to a session builder and returns the builder.

    Appends the bundled jar to ``spark.jars`` and :data:`EXTENSION_CLASS` to
    ``spark.sql.extensions``, keeping whatever jars and extensions (Delta's, say) the builder
    already has, and sets adaptive execution's cost model to :data:`COST_EVALUATOR_CLASS` unless
    the builder already names one (skewagg never replaces yours; without its model, adaptive
    execution rejects the runtime skew splits), and appends :data:`EXPLAIN_GENERATOR_CLASS` to
    ``spark.sql.extendedExplainProviders``, so ``df.explain()`` says what skewagg decided for
    each aggregate (see :func:`explain`; Spark 4.0+, whose EXPLAIN has such sections), and sets
    :data:`BLOCK_SKEW_FACTOR_KEY` to the skew factor (``spark.skewagg.skew.factor``, 5.0 unless
    the builder sets it) unless the builder already sets it: on shuffles of more than 2000
    partitions Spark otherwise averages each map task's block sizes, which hides a hot key from
    skewagg's run-time rules (docs/production.md). The jar is
    that of :func:`jar_path` for ``spark_version`` and ``scala_version``. Calling it twice adds
    nothing twice. Like
    ``configure_spark_with_delta_pip``::

        spark = skewagg.configure(SparkSession.builder.appName("x")).getOrCreate()

    These settings are read when the SparkContext starts: if one is already running in this
    process, stop it first (``spark.stop()``), or :func:`require_loaded` will say the extension is
    missing. A Spark Connect client of a server started elsewhere (``remote("sc://...")``) cannot
    set them: there ``configure`` sets only the session settings (the cost model, the explain
    section) and prints, once, the flags the server needs (:func:`server_flags`).
    """
    if _is_remote_client(builder):
        return _configure_remote_client(builder, spark_version)
    jar = jar_path(spark_version, scala_version)
    jars = split_list(_builder_option(builder, "spark.jars"))
    if jar not in jars:
        jars.append(jar)
    extensions = split_list(_builder_option(builder, "spark.sql.extensions"))
    if EXTENSION_CLASS not in extensions:
        extensions.append(EXTENSION_CLASS)
    builder = builder.config("spark.jars", ",".join(jars)).config(
        "spark.sql.extensions", ",".join(extensions)
    )
    builder = _configure_session_settings(builder, spark_version)
    if not _builder_option(builder, BLOCK_SKEW_FACTOR_KEY):
        factor = _builder_option(builder, SKEW_FACTOR_KEY) or DEFAULT_SKEW_FACTOR
        builder = builder.config(BLOCK_SKEW_FACTOR_KEY, factor)
    return builder


def _configure_session_settings(builder: "SparkSession.Builder",
                                spark_version: Optional[str]) -> "SparkSession.Builder":
    """The settings of :func:`configure` that a session may set (a Connect client's too): the
    explain section appended, the cost model unless the builder names one."""
    providers = split_list(_builder_option(builder, EXPLAIN_PROVIDERS_KEY))
    if has_explain_providers(spark_version) and EXPLAIN_GENERATOR_CLASS not in providers:
        builder = builder.config(
            EXPLAIN_PROVIDERS_KEY, ",".join(providers + [EXPLAIN_GENERATOR_CLASS]))
    if not _builder_option(builder, COST_EVALUATOR_KEY):
        builder = builder.config(COST_EVALUATOR_KEY, COST_EVALUATOR_CLASS)
    return builder


def _configure_remote_client(builder: "SparkSession.Builder",
                             spark_version: Optional[str]) -> "SparkSession.Builder":
    global _server_flags_shown
    builder = _configure_session_settings(builder, spark_version)
    if not _server_flags_shown:
        _server_flags_shown = True
        flags = " ".join(server_flags(spark_version))
        print(f"skewagg: a Spark Connect server loads skewagg only if it was started with: "
              f"{flags} (python -m skewagg server-conf prints them)", file=sys.stderr)
    return builder


def loaded_version(spark: "SparkSession") -> str:
    """The skewagg build serving ``spark``, e.g. ``skewagg 0.1.0 for Spark 4.0 (Scala 2.13)``."""
    require_loaded(spark)
    return str(spark.sql(f"SELECT {VERSION_FUNCTION}()").collect()[0][0])


def executor_builds(spark: "SparkSession", tasks: Optional[int] = None) -> Dict[str, str]:
    """Which skewagg build each executor that ran a task loaded: ``{executor id: build}``.

    Runs one small job of ``tasks`` tasks (default: one per task slot of the application, as the
    rules count them, at least 2) that calls into the jar on the executors, so it fails with
    Spark's ClassNotFoundException when the jar did not reach them (e.g. ``spark.jars`` was not
    set when the cluster started).
    """
    require_loaded(spark)
    n = tasks or max(2, task_slots(spark))
    rows = spark.sql(
        f"SELECT DISTINCT reflect('io.skewagg.BuildInfo', 'describeHere') AS here "
        f"FROM range(0, {n}, 1, {n})"
    ).collect()
    builds: Dict[str, str] = {}
    for row in rows:
        build, _, executor = str(row["here"]).rpartition(" on ")
        builds[executor] = build
    return builds


def enable(spark: "SparkSession") -> None:
    """Turns skewagg on for ``spark``; raises :class:`NotLoadedError` when it is not loaded."""
    require_loaded(spark)
    spark.conf.set(ENABLED_KEY, "true")


def disable(spark: "SparkSession") -> None:
    """Turns skewagg off for ``spark``: every query plans exactly as in vanilla Spark."""
    spark.conf.set(ENABLED_KEY, "false")


def is_active(spark: "SparkSession") -> bool:
    """True when skewagg is loaded in ``spark`` and ``spark.skewagg.enabled`` is true."""
    return is_loaded(spark) and str(spark.conf.get(ENABLED_KEY, "true")).lower() == "true"
