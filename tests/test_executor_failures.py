"""Executor failures on a local-cluster of two executor JVMs: a rewritten query whose executor is
killed in its local (map) stage, or in its final stage (which also loses that executor's map
output: the external shuffle service is off, so the reduce side fails to fetch it and Spark
re-runs the map stage), returns exactly what the query returns with skewagg off and nothing
killed. A re-run task's partial results are merged exactly once, or sums and counts would differ.
The app (tests/apps/executor_kill.py) kills the executor from a UDF, deterministically once."""

from __future__ import annotations

from pathlib import Path

import pytest

from plans import SINGLE_KEY_AGGREGATES, USER_REPARTITION, Plan
from subprocesses import child_env, report, spark_home, spark_submit, submit_args

pytestmark = pytest.mark.cluster

# What each query's skewagg plan shows: the rewrite the kill must not break.
REWRITTEN = {
    "join": lambda plan: plan.has("FlushingPartialAggregateExec")
    and plan.has("SkewAggLocalStageExec"),
    "repartition": lambda plan: plan.partial_below_exchange(USER_REPARTITION),
    "percentile": lambda plan: plan.has(*SINGLE_KEY_AGGREGATES),
}


# Each kill costs an executor JVM restart: adaptive execution off and on for the join, whose
# rewrite is planned differently with each; adaptive execution on (Spark's default) for the others.
ADAPTIVE = {"join": [False, True], "repartition": [True], "percentile": [True]}


# make test kills an executor under the join, the rewrite planned differently with and without
# adaptive execution; make test-full under every rewrite.
@pytest.mark.parametrize("query", [
    q if q == "join" else pytest.param(q, marks=pytest.mark.slow) for q in sorted(REWRITTEN)])
def test_killed_executor_in_local_and_final_stage_gives_the_same_rows(
        query: str, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.mkdir()
    env = child_env(SPARK_HOME=str(spark_home(tmp_path)))
    result = report(spark_submit(
        "executor_kill.py", *submit_args("local-cluster[2,1,1024]"),
        "--conf", "spark.executor.memory=1g",
        "--conf", "spark.shuffle.service.enabled=false",
        # A fetch from the killed executor is retried 3 times before the fetch failure that runs
        # the map stage again: 100 ms apart here instead of Spark's 5 s, the same retries sooner.
        "--conf", "spark.shuffle.io.retryWait=100ms",
        env=env, timeout=600,
        app_args=[query, str(tokens), ",".join(str(a).lower() for a in ADAPTIVE[query])],
    ))
    rows, kills, seen = result["rows"], result["kills"], result["seen"]
    plans = {run: Plan(**plan) for run, plan in result["plans"].items()}
    for adaptive in ADAPTIVE[query]:
        expected = rows[f"off,adaptive={adaptive}"]
        assert len(expected) > 50
        assert not REWRITTEN[query](plans[f"off,adaptive={adaptive}"])
        for stage in ("map", "final"):
            run = f"{stage},adaptive={adaptive}"
            assert rows[run] == expected, run
            assert REWRITTEN[query](plans[run]), (run, plans[run])
            # The kill happened: an executor JVM was killed, and a task attempt failed with it (the
            # status tracker keeps the failed-task count of a stage's latest attempt only).
            assert kills[run]["pid"] > 0, run
            assert not Path(f"/proc/{kills[run]['pid']}").exists(), run
            assert seen[run]["failedTasks"] >= 1 or seen[run]["maxStageAttempt"] >= 1, (run, seen)
        # Killed in the final stage, the executor took its map output along: fetch failure, and
        # the map stage ran again (a stage attempt after the first).
        assert seen[f"final,adaptive={adaptive}"]["maxStageAttempt"] >= 1, seen
