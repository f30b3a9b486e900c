"""Builds the extension jars (build/package-jar) when `pip install .` (not `-e`) runs from a
checkout that lacks a jar build/spark-lines asks for, so the wheel always carries one jar per
line and Scala binary.
Everything else is in pyproject.toml."""

import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def spark_builds() -> list:
    """(line, Scala binary) of every jar build/spark-lines asks for: each row's, and its
    also-scala column's."""
    rows = (ROOT / "build" / "spark-lines").read_text().splitlines()
    builds = []
    for row in (r.split() for r in rows if r.strip() and not r.startswith("#")):
        builds += [(row[0], ".".join(scala.split(".")[:2])) for scala in [row[2]] + row[4:5]]
    return builds


class BuildPyWithJar(build_py):
    def run(self) -> None:
        jars = ROOT / "python" / "skewagg" / "jars"
        script = ROOT / "build" / "package-jar"
        # An editable install (`pip install -e .`, make setup) reads the checkout's jars directory,
        # where make builds the jars it needs; only a wheel or a regular install copies them.
        editable = getattr(self, "editable_mode", False)
        if not editable and script.exists() and any(
                not list(jars.glob(f"skewagg-spark{line}_{scala}-*.jar"))
                for line, scala in spark_builds()):
            subprocess.run(["bash", str(script)], check=True)
        super().run()


setup(cmdclass={"build_py": BuildPyWithJar})
