"""Running Python and spark-submit in child processes and reading their one-line JSON report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

TESTS = Path(__file__).resolve().parent
APPS = TESTS / "apps"
BIN = Path(sys.executable).parent


def child_env(**extra: str) -> Dict[str, str]:
    env = dict(os.environ)
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


def report(proc: subprocess.CompletedProcess) -> Dict[str, Any]:
    """The JSON after 'REPORT ' in the child's stdout; fails with its output when absent."""
    for line in proc.stdout.splitlines():
        if line.startswith("REPORT "):
            return json.loads(line[len("REPORT "):])
    raise AssertionError(
        f"no report (exit {proc.returncode})\nstdout:\n{proc.stdout}\n"
        f"stderr:\n{proc.stderr[-4000:]}"
    )


def spark_submit(app: str, *spark_args: str, env: Optional[Dict[str, str]] = None,
                 app_args: Optional[List[str]] = None, timeout: int = 300
                 ) -> subprocess.CompletedProcess:
    return run([str(BIN / "spark-submit"), *spark_args, str(APPS / app), *(app_args or [])],
               env=env, timeout=timeout)
