"""skewagg through spark-submit: the README's `$(python -m skewagg server-conf)` in a shell, or
--jars plus spark.sql.extensions, locally and on a cluster of separate executor JVMs
(local-cluster)."""

import shlex
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

import skewagg
from plans import USER_REPARTITION, Plan
from subprocesses import (
    Started,
    child_env,
    report,
    spark_home,
    spark_submit,
    spark_submit_args,
    submit_args,
)

pytestmark = [pytest.mark.packaging, pytest.mark.spread]

EXPECTED_TOTAL = sum(range(20000))


def _substituted_submit() -> List[str]:
    """``bash -c 'spark-submit $(python -m skewagg server-conf) --master local[2] ... app.py'``"""
    submit, *rest = spark_submit_args("report_active.py", "--master", "local[2]",
                                      "--conf", "spark.ui.enabled=false")
    flags = f"$({shlex.quote(sys.executable)} -m skewagg server-conf)"
    return ["bash", "-c", " ".join([shlex.quote(submit), flags, *map(shlex.quote, rest)])]


@pytest.fixture(scope="module")
def local_apps() -> Dict[str, Started]:
    """The local spark-submit runs, started at once (each is mostly its JVMs starting)."""
    return {
        # The README's `spark-submit $(python -m skewagg server-conf) app.py`, in a real shell.
        "with": Started(_substituted_submit()),
        "without": Started(spark_submit_args("report_active.py", "--master", "local[1]")),
        # More than 2000 shuffle partitions and no block skew factor: sizes averaged.
        "averaged": Started(spark_submit_args(
            "report_active.py", *submit_args("local[2]", block_skew_factor=False),
            "--conf", "spark.sql.shuffle.partitions=2001")),
    }


def test_spark_submit_with_the_server_conf_substituted_by_a_shell(
        local_apps: Dict[str, Started]) -> None:
    proc = local_apps["with"].result()
    assert "$(" in proc.args[-1]  # the flags came through the shell's substitution
    result = report(proc)
    assert result["loaded"] and result["active"]
    assert result["version"].startswith(f"skewagg {skewagg.__version__}")
    assert result["total"] == EXPECTED_TOTAL
    plan = Plan(**result["plan"])
    assert plan.partial_below_exchange(USER_REPARTITION), plan


def test_spark_submit_without_the_extension_is_not_active(
        local_apps: Dict[str, Started]) -> None:
    result = report(local_apps["without"].result())
    assert result == {"loaded": False, "active": False}


def test_the_session_warns_once_where_shuffles_would_hide_a_hot_key(
        local_apps: Dict[str, Started]) -> None:
    proc = local_apps["averaged"].result()
    assert report(proc)["total"] == EXPECTED_TOTAL
    warning = "spark.sql.shuffle.partitions=2001"
    assert proc.stderr.count(warning) == 1, proc.stderr[-4000:]
    assert f"Set {skewagg.BLOCK_SKEW_FACTOR_KEY}=5.0 when the application starts" in proc.stderr
    assert warning not in local_apps["with"].result().stderr


@pytest.mark.cluster
def test_local_cluster_executors_load_the_jar(local_cluster: Dict[str, Any]) -> None:
    result = local_cluster["executors"]
    assert result["loaded"] and result["active"]
    # Both executor JVMs (ids "0" and "1", not the driver) ran code from the skewagg jar.
    executors = result["executors"]
    assert sorted(executors) == ["0", "1"], executors
    assert all(build == result["version"] for build in executors.values())
    assert result["total"] == EXPECTED_TOTAL
    plan = Plan(**result["plan"])
    assert plan.partial_below_exchange(USER_REPARTITION), plan
    assert (local_cluster["spark_home"] / "work").is_dir()


@pytest.mark.cluster
def test_dynamic_allocation_plans_for_the_executors_a_stage_can_get(tmp_path: Path) -> None:
    """tests/apps/dynamic_allocation.py on local-cluster[2,1,1024] with dynamic allocation
    (shuffle tracking, at most 8 one-core executors): the skewed join below the aggregate is
    split, planned for 8 task slots (the most a stage of 32 tasks can get) while at most two
    executors run, and all four variants give Spark's rows (docs/production.md)."""
    env = child_env(SPARK_HOME=str(spark_home(tmp_path)))
    settings = {
        "spark.dynamicAllocation.enabled": "true",
        "spark.dynamicAllocation.shuffleTracking.enabled": "true",
        "spark.dynamicAllocation.minExecutors": "0",
        "spark.dynamicAllocation.initialExecutors": "1",
        "spark.dynamicAllocation.maxExecutors": "8",
        "spark.executor.cores": "1",
        "spark.executor.memory": "1g",
        "spark.sql.shuffle.partitions": "32",
        "spark.sql.adaptive.coalescePartitions.enabled": "false",
        "spark.sql.autoBroadcastJoinThreshold": "-1",
        "spark.sql.adaptive.customCostEvaluatorClass": skewagg.COST_EVALUATOR_CLASS,
        "spark.skewagg.join.localAggregate.enabled": "false",
        # On 8 slots a partition of 30% of the rows is above 1.5x the per-slot share (19%); on
        # the one or two executors running at decision time it is not (75% or 38%).
        "spark.skewagg.skew.factor": "1.5",
        "spark.skewagg.skew.minPartitionSize": "4k",
        "spark.skewagg.skew.minSplitSize": "2k",
    }
    conf_args = [arg for key, value in settings.items() for arg in ("--conf", f"{key}={value}")]
    result = report(spark_submit(
        "dynamic_allocation.py", *submit_args("local-cluster[2,1,1024]"), *conf_args, env=env,
    ))
    rows = result["rows"]
    for name, actual in rows.items():
        assert actual == rows["skewagg=False,adaptive=False"], name
    # Key 0 and the 700 keys (id * 7919) % 1000 takes for ids whose last digit is 3 to 9.
    assert len(rows["skewagg=False,adaptive=False"]) == 701
    explained = result["explained"]
    assert "rewritten: skew split of the join below the aggregate" in explained, explained
    assert "the per-slot share on 8 slots" in explained, explained
