"""skewagg through spark-submit: --jars plus spark.sql.extensions, locally and on a cluster of
separate executor JVMs (local-cluster)."""

import os
from pathlib import Path
from typing import Dict

import pytest
import pyspark

import skewagg
from plans import USER_REPARTITION, Plan
from subprocesses import Started, child_env, report, spark_submit, spark_submit_args

pytestmark = pytest.mark.packaging

EXPECTED_TOTAL = sum(range(20000))


def _submit_args(master: str) -> list:
    return [
        "--master", master,
        "--jars", skewagg.jar_path(),
        "--conf", f"spark.sql.extensions={skewagg.EXTENSION_CLASS}",
        "--conf", "spark.ui.enabled=false",
    ]


@pytest.fixture(scope="module")
def local_apps() -> Dict[str, Started]:
    """The two local spark-submit runs, started at once (each is mostly its JVMs starting)."""
    return {
        "with": Started(spark_submit_args("report_active.py", *_submit_args("local[2]"))),
        "without": Started(spark_submit_args("report_active.py", "--master", "local[1]")),
    }


def test_spark_submit_with_jars_and_extension_conf(local_apps: Dict[str, Started]) -> None:
    result = report(local_apps["with"].result())
    assert result["loaded"] and result["active"]
    assert result["version"].startswith(f"skewagg {skewagg.__version__}")
    assert result["total"] == EXPECTED_TOTAL
    plan = Plan(**result["plan"])
    assert plan.partial_below_exchange(USER_REPARTITION), plan


def test_spark_submit_without_the_extension_is_not_active(
        local_apps: Dict[str, Started]) -> None:
    result = report(local_apps["without"].result())
    assert result == {"loaded": False, "active": False}


def _spark_home(tmp_path: Path) -> Path:
    """A directory laid out like a Spark distribution, pointing into the pip-installed pyspark;
    workers write their work/ directories here, not into site-packages."""
    home = tmp_path / "spark-home"
    home.mkdir()
    pyspark_dir = Path(pyspark.__file__).resolve().parent
    for name in ("bin", "jars", "python", "sbin"):
        if (pyspark_dir / name).exists():
            os.symlink(pyspark_dir / name, home / name)
    return home


@pytest.mark.cluster
def test_local_cluster_executors_load_the_jar(tmp_path: Path) -> None:
    home = _spark_home(tmp_path)
    env = child_env(SPARK_HOME=str(home))
    result = report(spark_submit(
        "report_active.py", *_submit_args("local-cluster[2,1,1024]"),
        "--conf", "spark.executor.memory=1g", env=env,
    ))
    assert result["loaded"] and result["active"]
    # Both executor JVMs (ids "0" and "1", not the driver) ran code from the skewagg jar.
    executors = result["executors"]
    assert sorted(executors) == ["0", "1"], executors
    assert all(build == result["version"] for build in executors.values())
    assert result["total"] == EXPECTED_TOTAL
    plan = Plan(**result["plan"])
    assert plan.partial_below_exchange(USER_REPARTITION), plan
    assert (home / "work").is_dir()
