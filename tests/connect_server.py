"""A Spark Connect server started with skewagg by the README's command (section "With Spark
Connect"), for the Connect client tests."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, List, Optional

from subprocesses import BIN, child_env

README = Path(__file__).resolve().parent.parent / "README.md"

STARTED = "Spark Connect server started"


def readme_server_command() -> str:
    """The shell command of the README's "With Spark Connect" section."""
    section = README.read_text().split("### With Spark Connect", 1)[1].split("\n### ", 1)[0]
    match = re.search(r"```bash\n(.*?)```", section, re.S)
    assert match, "README.md's 'With Spark Connect' section has no bash block"
    return match.group(1).replace("\\\n", " ").strip()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return int(s.getsockname()[1])


def _accepts(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("localhost", port)) == 0


@contextmanager
def connect_server(spark_args: List[str], env: Optional[Dict[str, str]] = None,
                   timeout: float = 240) -> Iterator[str]:
    """Runs the README's server command with ``spark_args`` appended (and a free port); yields
    the server's ``sc://`` address once it accepts connections, and stops it after."""
    port = _free_port()
    command = readme_server_command() + " " + " ".join(
        [*spark_args, "--conf", f"spark.connect.grpc.binding.port={port}"])
    environment = env or child_env()
    # `spark-submit` and `python` of the README are this virtualenv's.
    environment["PATH"] = os.pathsep.join([str(BIN), environment.get("PATH", "")])
    log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
    proc = subprocess.Popen(["bash", "-c", f"exec {command}"], env=environment, stdout=log,
                            stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + timeout
        # Waits for a condition (the server accepting connections), not for a time.
        while not _accepts(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                raise AssertionError(f"the Connect server did not start ({command}):\n"
                                     f"{log.read()[-6000:]}")
            time.sleep(0.2)
        yield f"sc://localhost:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        os.unlink(log.name)
