import pytest
from pyspark.sql import SparkSession

import skewagg

pytestmark = pytest.mark.packaging


def _options(builder: SparkSession.Builder) -> dict:
    return dict(builder._options)


def test_configure_adds_the_jar_and_the_extension() -> None:
    builder = skewagg.configure(SparkSession.Builder())
    options = _options(builder)
    assert options["spark.jars"] == skewagg.jar_path()
    assert options["spark.sql.extensions"] == skewagg.EXTENSION_CLASS
    assert options[skewagg.COST_EVALUATOR_KEY] == skewagg.COST_EVALUATOR_CLASS


def test_configure_keeps_a_cost_evaluator_the_user_chose() -> None:
    builder = SparkSession.Builder().config(skewagg.COST_EVALUATOR_KEY, "com.example.MyCost")
    options = _options(skewagg.configure(builder))
    assert options[skewagg.COST_EVALUATOR_KEY] == "com.example.MyCost"


def test_configure_keeps_existing_jars_and_extensions() -> None:
    builder = (
        SparkSession.Builder()
        .config("spark.jars", "/opt/a.jar,/opt/b.jar")
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
    )
    returned = skewagg.configure(builder)
    assert returned is builder
    options = _options(builder)
    assert options["spark.jars"] == f"/opt/a.jar,/opt/b.jar,{skewagg.jar_path()}"
    assert options["spark.sql.extensions"] == (
        f"io.delta.sql.DeltaSparkSessionExtension,{skewagg.EXTENSION_CLASS}"
    )


def test_configure_twice_adds_nothing_twice() -> None:
    builder = skewagg.configure(skewagg.configure(SparkSession.Builder()))
    options = _options(builder)
    assert options["spark.jars"].split(",") == [skewagg.jar_path()]
    assert options["spark.sql.extensions"].split(",") == [skewagg.EXTENSION_CLASS]


@pytest.mark.parametrize("version, has_sections", [("3.5.9", False), ("4.0.1", True)])
def test_configure_names_the_explain_section_where_spark_explain_has_sections(
        version: str, has_sections: bool) -> None:
    builder = SparkSession.Builder()
    builder._options.pop(skewagg.EXPLAIN_PROVIDERS_KEY, None)  # (pyspark 3.5: a class attribute)
    options = _options(skewagg.configure(builder, spark_version=version))
    named = options.get(skewagg.EXPLAIN_PROVIDERS_KEY) == skewagg.EXPLAIN_GENERATOR_CLASS
    assert named == has_sections


def test_configure_keeps_skewed_block_sizes_exact_at_the_skew_factor() -> None:
    builder = SparkSession.Builder()
    builder._options.pop(skewagg.BLOCK_SKEW_FACTOR_KEY, None)  # (pyspark 3.5: a class attribute)
    builder._options.pop("spark.skewagg.skew.factor", None)
    assert _options(skewagg.configure(builder))[skewagg.BLOCK_SKEW_FACTOR_KEY] == "5.0"
    builder._options.pop(skewagg.BLOCK_SKEW_FACTOR_KEY)
    builder.config("spark.skewagg.skew.factor", "3")
    assert _options(skewagg.configure(builder))[skewagg.BLOCK_SKEW_FACTOR_KEY] == "3"
    builder._options.pop("spark.skewagg.skew.factor")


def test_configure_keeps_a_block_skew_factor_the_user_chose() -> None:
    builder = SparkSession.Builder().config(skewagg.BLOCK_SKEW_FACTOR_KEY, "10")
    assert _options(skewagg.configure(builder))[skewagg.BLOCK_SKEW_FACTOR_KEY] == "10"
    builder._options.pop(skewagg.BLOCK_SKEW_FACTOR_KEY)


def test_configure_on_a_remote_connect_client_sets_only_session_settings(
        capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(skewagg.session, "_server_flags_shown", False)
    builder = SparkSession.Builder()
    builder._options.clear()  # (pyspark 3.5: a class attribute shared by every builder)
    builder.remote("sc://spark.example.com:15002")
    options = _options(skewagg.configure(skewagg.configure(builder)))
    for server_only in ("spark.jars", "spark.sql.extensions", skewagg.BLOCK_SKEW_FACTOR_KEY):
        assert server_only not in options, options
    assert options[skewagg.COST_EVALUATOR_KEY] == skewagg.COST_EVALUATOR_CLASS
    printed = capsys.readouterr().err
    # Once for the two calls, naming every flag the server needs.
    assert printed.count("a Spark Connect server loads skewagg only if") == 1, printed
    assert " ".join(skewagg.server_flags()) in printed
    builder._options.clear()


def test_server_flags_name_the_jar_the_extension_and_the_settings() -> None:
    flags = skewagg.server_flags()
    assert flags[:2] == ["--jars", skewagg.jar_path()]
    settings = dict(flags[i + 1].split("=", 1) for i in range(2, len(flags), 2))
    assert settings["spark.sql.extensions"] == skewagg.EXTENSION_CLASS
    assert settings[skewagg.COST_EVALUATOR_KEY] == skewagg.COST_EVALUATOR_CLASS
    assert settings[skewagg.BLOCK_SKEW_FACTOR_KEY] == "5.0"
