import sys
from pathlib import Path

import pytest

import skewagg
from subprocesses import child_env, run

pytestmark = pytest.mark.packaging


def test_jar_path_prints_the_bundled_jar() -> None:
    proc = run([sys.executable, "-m", "skewagg", "jar-path"])
    assert proc.returncode == 0, proc.stderr
    path = Path(proc.stdout.strip())
    assert path.is_file() and str(path) == skewagg.jar_path()


def test_jar_path_for_an_unsupported_spark_fails_listing_supported_lines() -> None:
    proc = run([sys.executable, "-m", "skewagg", "jar-path", "--spark-version", "3.4.1"])
    assert proc.returncode == 2
    assert "no jar for Spark 3.4" in proc.stderr
    assert "supports Spark 3.5, 4.0" in proc.stderr


def test_jar_path_picks_the_scala_build_asked_for() -> None:
    for scala in ("2.12", "2.13"):
        proc = run([sys.executable, "-m", "skewagg", "jar-path", "--spark-version", "3.5.9",
                    "--scala-version", scala])
        assert proc.returncode == 0, proc.stderr
        assert Path(proc.stdout.strip()).name.startswith(f"skewagg-spark3.5_{scala}-")
    proc = run([sys.executable, "-m", "skewagg", "jar-path", "--spark-version", "4.0.1",
                "--scala-version", "2.12"])
    assert proc.returncode == 2
    assert "no jar for Spark 4.0 built with Scala 2.12 (it has Scala 2.13" in proc.stderr


def test_spark_lines_lists_what_is_bundled() -> None:
    proc = run([sys.executable, "-m", "skewagg", "spark-lines"])
    assert proc.returncode == 0 and proc.stdout.split() == skewagg.supported_spark_lines()


def test_server_conf_prints_the_flags_a_connect_server_needs() -> None:
    proc = run([sys.executable, "-m", "skewagg", "server-conf"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("\n") == 1  # one line
    flags = skewagg.server_flags()
    assert flags[:2] == ["--jars", skewagg.jar_path()]
    assert f"spark.sql.extensions={skewagg.EXTENSION_CLASS}" in flags
    assert proc.stdout.split() == flags


def test_server_conf_in_a_shells_substitution_gives_each_flag_as_one_argument() -> None:
    """What `spark-submit $(python -m skewagg server-conf) app.py` hands spark-submit, and the
    same through eval of --format shell, read back by a real shell."""
    command = f"{sys.executable} -m skewagg server-conf"
    for script in (f'printf "%s\\n" $({command})',
                   f'eval "printf \'%s\\n\' $({command} --format shell)"'):
        proc = run(["bash", "-c", script])
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines() == skewagg.server_flags(), script


def test_server_conf_refuses_a_path_that_substitution_would_split(
        tmp_path: Path) -> None:
    import shutil

    jars = tmp_path / "my jars" / "skewagg"
    shutil.copytree(Path(skewagg.__file__).parent, jars)
    env = child_env(PYTHONPATH=str(tmp_path / "my jars"))
    proc = run([sys.executable, "-m", "skewagg", "server-conf"], env=env)
    assert proc.returncode == 2
    assert "holds a space or a glob character" in proc.stderr
    assert "--format shell" in proc.stderr
    proc = run(["bash", "-c", f'eval "printf \'%s\\n\' $({sys.executable} -m skewagg '
                              'server-conf --format shell)"'], env=env)
    assert proc.returncode == 0 and " " in proc.stdout.splitlines()[1], proc.stderr


def test_server_conf_as_spark_defaults_lines() -> None:
    proc = run([sys.executable, "-m", "skewagg", "server-conf", "--format", "conf"])
    assert proc.returncode == 0, proc.stderr
    settings = dict(line.split(None, 1) for line in proc.stdout.splitlines())
    assert settings["spark.jars"] == skewagg.jar_path()
    assert settings["spark.sql.extensions"] == skewagg.EXTENSION_CLASS


def test_jar_path_follows_spark_home_without_pyspark_on_the_path(tmp_path: Path) -> None:
    """A cluster's Spark in $SPARK_HOME, pyspark not importable: the jar of SPARK_HOME's line."""
    (tmp_path / "spark" / "jars").mkdir(parents=True)
    (tmp_path / "spark" / "jars" / "spark-core_2.12-3.5.1.jar").write_bytes(b"PK")
    no_pyspark = "import sys, runpy; sys.modules['pyspark'] = None; " \
                 "sys.argv = ['skewagg', 'jar-path']; runpy.run_module('skewagg', " \
                 "run_name='__main__')"
    proc = run([sys.executable, "-c", no_pyspark],
               env=child_env(SPARK_HOME=str(tmp_path / "spark")))
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip()).name.startswith("skewagg-spark3.5_2.12-")
    proc = run([sys.executable, "-c", no_pyspark], env=child_env())
    assert proc.returncode == 2 and "found no Spark" in proc.stderr, proc.stderr
