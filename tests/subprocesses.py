"""Running Python and spark-submit in child processes and reading their one-line JSON report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional

import pyspark

import skewagg

TESTS = Path(__file__).resolve().parent
APPS = TESTS / "apps"
BIN = Path(sys.executable).parent


# The JVMs of child processes (apps, spark-submit, Connect servers, local-cluster executors) live
# for seconds, where C1's quick compiles beat C2's: the 4.1 packaging tests ran in 121 s against
# 158 s (docs/testing.md). Nor do they verify the bytecode of the jars they load (Spark's and
# skewagg's, which the test session's JVM and every Scala suite's load verified; docs/testing.md).
# The test session's own long-lived JVM keeps both tiers and verifies.
CHILD_JVM_OPTIONS = (
    "-XX:TieredStopAtLevel=1 -XX:+UnlockDiagnosticVMOptions -XX:-BytecodeVerificationRemote")


def child_env(**extra: str) -> Dict[str, str]:
    env = dict(os.environ)
    env["JAVA_TOOL_OPTIONS"] = " ".join(
        o for o in (env.get("JAVA_TOOL_OPTIONS"), CHILD_JVM_OPTIONS) if o)
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env.pop("SPARK_HOME", None)
    # Apps report plans with tests/plans.py.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(TESTS), env.get("PYTHONPATH")) if p)
    env.update(extra)
    return env


def run(args: List[str], env: Optional[Dict[str, str]] = None, timeout: int = 300
        ) -> subprocess.CompletedProcess:
    return subprocess.run(args, env=env or child_env(), capture_output=True, text=True,
                          timeout=timeout)


class Started:
    """A child process started now and read later, so that the children of several tests run at
    the same time (most of a child's time is its JVM starting). Its output goes to files: a full
    pipe would stop a child while another is being waited for."""

    def __init__(self, args: List[str], env: Optional[Dict[str, str]] = None,
                 timeout: int = 300) -> None:
        self._out = tempfile.TemporaryFile("w+")
        self._err = tempfile.TemporaryFile("w+")
        self._proc = subprocess.Popen(args, env=env or child_env(), stdout=self._out,
                                      stderr=self._err, text=True)
        self._timeout = timeout
        self._done: Optional[subprocess.CompletedProcess] = None

    def result(self) -> subprocess.CompletedProcess:
        """Waits for the child (killed after the timeout) and returns what run() would."""
        if self._done is None:
            try:
                self._proc.wait(timeout=self._timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._out.seek(0)
            self._err.seek(0)
            self._done = subprocess.CompletedProcess(
                self._proc.args, self._proc.returncode, self._out.read(), self._err.read())
            self._out.close()
            self._err.close()
        return self._done


def report(proc: subprocess.CompletedProcess) -> Dict[str, Any]:
    """The JSON after 'REPORT ' in the child's stdout; fails with its output when absent."""
    for line in proc.stdout.splitlines():
        if line.startswith("REPORT "):
            return json.loads(line[len("REPORT "):])
    raise AssertionError(
        f"no report (exit {proc.returncode})\nstdout:\n{proc.stdout}\n"
        f"stderr:\n{proc.stderr[-4000:]}"
    )


def spark_submit_args(app: str, *spark_args: str, app_args: Optional[List[str]] = None
                      ) -> List[str]:
    return [str(BIN / "spark-submit"), *spark_args, str(APPS / app), *(app_args or [])]


def spark_submit(app: str, *spark_args: str, env: Optional[Dict[str, str]] = None,
                 app_args: Optional[List[str]] = None, timeout: int = 300
                 ) -> subprocess.CompletedProcess:
    return run(spark_submit_args(app, *spark_args, app_args=app_args), env=env, timeout=timeout)


def spark_home(tmp_path: Path) -> Path:
    """A directory laid out like a Spark distribution, pointing into the pip-installed pyspark;
    workers write their work/ directories here, not into site-packages."""
    home = tmp_path / "spark-home"
    home.mkdir()
    pyspark_dir = Path(pyspark.__file__).resolve().parent
    for name in ("bin", "jars", "python", "sbin"):
        if (pyspark_dir / name).exists():
            os.symlink(pyspark_dir / name, home / name)
    return home


def submit_args(master: str, block_skew_factor: bool = True) -> list:
    """The README's spark-submit flags (the cost model aside) on ``master``."""
    factor = ["--conf", f"{skewagg.BLOCK_SKEW_FACTOR_KEY}=5.0"] if block_skew_factor else []
    return [
        "--master", master,
        "--jars", skewagg.jar_path(),
        "--conf", f"spark.sql.extensions={skewagg.EXTENSION_CLASS}",
        *factor,
        "--conf", "spark.ui.enabled=false",
    ]
