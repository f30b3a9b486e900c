from pathlib import Path

import pytest

import skewagg
from skewagg._jars import bundled_jars, jar_for, spark_line
from skewagg.errors import JarNotFoundError, UnsupportedSparkVersionError

pytestmark = pytest.mark.packaging


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
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
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


def test_no_jar_for_the_running_spark_names_the_supported_lines(tmp_path: Path) -> None:
    jars = _touch(tmp_path, "skewagg-spark3.5_2.12-0.1.0.jar", "skewagg-spark4.0_2.13-0.1.0.jar")
    with pytest.raises(UnsupportedSparkVersionError) as info:
        jar_for("3.4.1", jars)
    message = str(info.value)
    assert "no jar for Spark 3.4" in message and "supports Spark 3.5, 4.0" in message
    assert "No skewagg release supports Spark 3.4 yet" in message


def test_a_newer_spark_line_names_every_supported_line_and_the_newest_skewagg(
        tmp_path: Path) -> None:
    jars = _touch(tmp_path, *(f"skewagg-spark{line}_2.13-0.1.0.jar"
                              for line in ("4.0", "4.1", "4.2", "4.3")))
    with pytest.raises(UnsupportedSparkVersionError) as info:
        jar_for("4.4.0", jars)
    message = str(info.value)
    assert "no jar for Spark 4.4" in message and "supports Spark 4.0, 4.1, 4.2, 4.3" in message
    assert "pip install --upgrade skewagg" in message and "pyspark==4.3.*" in message


def test_every_spark_line_of_the_build_is_bundled_and_allowed_by_the_package() -> None:
    """build/spark-lines (what the build makes jars for), the bundled jars and pyproject.toml's
    pyspark range name the same lines."""
    root = Path(__file__).resolve().parent.parent
    rows = (root / "build" / "spark-lines").read_text().splitlines()
    lines = [r.split()[0] for r in rows if r.strip() and not r.startswith("#")]
    assert skewagg.supported_spark_lines() == lines
    newest = lines[-1].split(".")
    upper = f"{newest[0]}.{int(newest[1]) + 1}"
    assert f'"pyspark>={lines[0]},<{upper}"' in (root / "pyproject.toml").read_text()


def test_empty_jar_directory_says_how_to_build(tmp_path: Path) -> None:
    with pytest.raises(JarNotFoundError, match="make jar"):
        jar_for("4.0.1", tmp_path)


def test_the_installed_package_bundles_a_jar_for_the_installed_pyspark() -> None:
    import pyspark

    path = Path(skewagg.jar_path())
    assert path.is_file() and path.stat().st_size > 0
    assert path.name.startswith(f"skewagg-spark{spark_line(pyspark.__version__)}_")
    assert spark_line(pyspark.__version__) in skewagg.supported_spark_lines()
