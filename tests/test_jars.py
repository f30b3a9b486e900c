import sys
from pathlib import Path

import pytest

import skewagg
import skewagg._jars
from skewagg._jars import bundled_jars, jar_for, running_spark, spark_line
from skewagg.errors import JarNotFoundError, SparkNotFoundError, UnsupportedSparkVersionError

pytestmark = pytest.mark.packaging


@pytest.fixture
def no_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """No SparkContext counts as running here (the session fixture's may be): the Spark found is
    $SPARK_HOME's or the imported pyspark's."""
    monkeypatch.setattr(skewagg._jars, "_running_context", lambda: None)


def _touch(directory: Path, *names: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / name).write_bytes(b"PK")
    return directory


def test_spark_line_parses_versions() -> None:
    assert spark_line("4.0.1") == "4.0"
    assert spark_line("3.5.4-SNAPSHOT") == "3.5"
    with pytest.raises(ValueError, match="not a Spark version"):
        spark_line("four")


def test_jar_for_picks_the_running_spark_line(tmp_path: Path) -> None:
    jars = _touch(tmp_path, "skewagg-spark3.5_2.12-0.1.0.jar", "skewagg-spark4.0_2.13-0.1.0.jar",
                  "unrelated.jar")
    assert jar_for("4.0.3", jars).name == "skewagg-spark4.0_2.13-0.1.0.jar"
    assert jar_for("3.5.1", jars).name == "skewagg-spark3.5_2.12-0.1.0.jar"
    assert sorted(bundled_jars(jars)) == [("3.5", "2.12"), ("4.0", "2.13")]


def test_jar_for_picks_the_scala_of_the_spark_pyspark_starts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_context: None) -> None:
    jars = _touch(tmp_path / "skewagg", "skewagg-spark3.5_2.12-0.1.0.jar",
                  "skewagg-spark3.5_2.13-0.1.0.jar", "skewagg-spark4.0_2.13-0.1.0.jar")
    _touch(tmp_path / "spark" / "jars", "spark-core_2.13-3.5.4.jar", "spark-sql_2.13-3.5.4.jar")
    monkeypatch.setenv("SPARK_HOME", str(tmp_path / "spark"))
    assert jar_for("3.5.4", jars).name == "skewagg-spark3.5_2.13-0.1.0.jar"
    assert jar_for("3.5.4", jars, scala_version="2.12.18").name == (
        "skewagg-spark3.5_2.12-0.1.0.jar")
    # A SPARK_HOME of another line says nothing of this one: the line's default build.
    _touch(tmp_path / "spark4" / "jars", "spark-core_2.13-4.0.1.jar")
    monkeypatch.setenv("SPARK_HOME", str(tmp_path / "spark4"))
    assert jar_for("3.5.4", jars).name == "skewagg-spark3.5_2.12-0.1.0.jar"
    with pytest.raises(UnsupportedSparkVersionError, match=r"Scala 2.12 \(it has Scala 2.13"):
        jar_for("4.0.1", jars, scala_version="2.12")


def test_no_jar_for_the_spark_asked_for_names_the_supported_lines(tmp_path: Path) -> None:
    jars = _touch(tmp_path, "skewagg-spark3.5_2.12-0.1.0.jar", "skewagg-spark4.0_2.13-0.1.0.jar")
    with pytest.raises(UnsupportedSparkVersionError) as info:
        jar_for("3.4.1", jars)
    message = str(info.value)
    assert "no jar for Spark 3.4: Spark 3.4.1 was asked for" in message
    assert "it supports Spark 3.5, 4.0" in message
    assert "skewagg does not support Spark 3.4, older than 3.5" in message


def _spark_home(root: Path, version: str, scala: str = "2.12") -> Path:
    """A directory laid out as a Spark distribution's jars/ says (what running_spark reads)."""
    _touch(root / "jars", f"spark-core_{scala}-{version}.jar", f"spark-sql_{scala}-{version}.jar")
    return root


def test_the_spark_found_is_spark_homes_before_the_imported_pyspark(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_context: None) -> None:
    import pyspark

    jars = _touch(tmp_path / "skewagg", "skewagg-spark3.5_2.12-0.1.0.jar",
                  "skewagg-spark3.5_2.13-0.1.0.jar", "skewagg-spark4.3_2.13-0.1.0.jar")
    monkeypatch.delenv("SPARK_HOME", raising=False)
    assert running_spark().version == pyspark.__version__
    assert running_spark().kind == "pyspark"
    monkeypatch.setenv("SPARK_HOME", str(_spark_home(tmp_path / "spark", "3.5.2")))
    found = running_spark()
    assert (found.version, found.scala, found.kind) == ("3.5.2", "2.12", "spark_home")
    assert jar_for(None, jars).name == "skewagg-spark3.5_2.12-0.1.0.jar"
    monkeypatch.setenv("SPARK_HOME", str(_spark_home(tmp_path / "s213", "3.5.2", "2.13")))
    assert jar_for(None, jars).name == "skewagg-spark3.5_2.13-0.1.0.jar"
    # A SPARK_HOME without Spark's jars says nothing: the imported pyspark's Spark.
    monkeypatch.setenv("SPARK_HOME", str(tmp_path / "empty"))
    assert running_spark().version == pyspark.__version__


def test_the_running_context_comes_before_spark_home(
        spark: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyspark

    monkeypatch.setenv("SPARK_HOME", str(_spark_home(tmp_path / "spark", "3.4.1")))
    found = running_spark()
    assert found.kind == "context" and found.version == pyspark.__version__
    assert Path(skewagg.jar_path()).name.startswith(
        f"skewagg-spark{spark_line(pyspark.__version__)}_")


def test_no_spark_anywhere_says_where_it_looked(
        monkeypatch: pytest.MonkeyPatch, no_context: None) -> None:
    monkeypatch.delenv("SPARK_HOME", raising=False)
    monkeypatch.setitem(sys.modules, "pyspark", None)  # import pyspark raises ImportError
    with pytest.raises(SparkNotFoundError) as info:
        skewagg.jar_path()
    message = str(info.value)
    assert "SPARK_HOME is not set, and pyspark is not importable" in message
    assert "--spark-version" in message and "pip install 'pyspark>=3.5,<4.4'" in message


def test_an_unsupported_spark_home_names_the_lines_and_keeps_the_spark(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_context: None) -> None:
    jars = _touch(tmp_path / "skewagg", *(f"skewagg-spark{line}_2.13-0.1.0.jar"
                                          for line in ("4.0", "4.1", "4.2", "4.3")))
    home = _spark_home(tmp_path / "spark", "4.4.0", "2.13")
    monkeypatch.setenv("SPARK_HOME", str(home))
    with pytest.raises(UnsupportedSparkVersionError) as info:
        jar_for(None, jars)
    message = str(info.value)
    assert f"no jar for Spark 4.4: the Spark here is SPARK_HOME's Spark 4.4.0 ({home})" in message
    assert "it supports Spark 4.0, 4.1, 4.2, 4.3" in message
    assert "newer than the lines this skewagg was built for" in message
    assert "point SPARK_HOME at a Spark 4.0, 4.1, 4.2, 4.3 distribution" in message
    assert "pip install" not in message


def test_an_unsupported_pyspark_is_told_to_use_its_own_virtualenv(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_context: None) -> None:
    import pyspark

    jars = _touch(tmp_path, "skewagg-spark9.9_2.13-0.1.0.jar")
    monkeypatch.delenv("SPARK_HOME", raising=False)
    with pytest.raises(UnsupportedSparkVersionError) as info:
        jar_for(None, jars)
    message = str(info.value)
    assert f"the Spark here is pyspark {pyspark.__version__}" in message
    assert "pip install 'pyspark==9.9.*' in a virtualenv of its own" in message


def test_every_spark_line_of_the_build_is_bundled_and_allowed_by_the_package() -> None:
    """build/spark-lines (what the build makes jars for), the bundled jars and pyproject.toml's
    pyspark extra name the same lines; pyspark is no dependency."""
    root = Path(__file__).resolve().parent.parent
    rows = (root / "build" / "spark-lines").read_text().splitlines()
    lines = [r.split()[0] for r in rows if r.strip() and not r.startswith("#")]
    assert skewagg.supported_spark_lines() == lines
    newest = lines[-1].split(".")
    upper = f"{newest[0]}.{int(newest[1]) + 1}"
    pyproject = (root / "pyproject.toml").read_text()
    assert f'pyspark = ["pyspark>={lines[0]},<{upper}"]' in pyproject  # the extra
    dependencies = next(line for line in pyproject.splitlines() if line.startswith("dependencies"))
    assert "pyspark" not in dependencies  # a cluster's own PySpark is never replaced


def test_empty_jar_directory_says_how_to_build(tmp_path: Path) -> None:
    with pytest.raises(JarNotFoundError, match="make jar"):
        jar_for("4.0.1", tmp_path)


def test_the_installed_package_bundles_a_jar_for_the_installed_pyspark() -> None:
    import pyspark

    path = Path(skewagg.jar_path())
    assert path.is_file() and path.stat().st_size > 0
    assert path.name.startswith(f"skewagg-spark{spark_line(pyspark.__version__)}_")
    assert spark_line(pyspark.__version__) in skewagg.supported_spark_lines()
