"""Builds the extension jars (build/package-jar) when `pip install .` (not `-e`) runs from a
checkout that lacks the jar of a Spark line in build/spark-lines, so the wheel always carries one
jar per line.
Everything else is in pyproject.toml."""

import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def spark_lines() -> list:
    """The Spark lines of build/spark-lines (first column of each row)."""
    rows = (ROOT / "build" / "spark-lines").read_text().splitlines()
    return [r.split()[0] for r in rows if r.strip() and not r.startswith("#")]


class BuildPyWithJar(build_py):
    def run(self) -> None:
        jars = ROOT / "python" / "skewagg" / "jars"
        script = ROOT / "build" / "package-jar"
        # An editable install (`pip install -e .`, make setup) reads the checkout's jars directory,
        # where make builds the jars it needs; only a wheel or a regular install copies them.
        editable = getattr(self, "editable_mode", False)
        if not editable and script.exists() and any(
                not list(jars.glob(f"skewagg-spark{line}_*.jar")) for line in spark_lines()):
            subprocess.run(["bash", str(script)], check=True)
        super().run()


setup(cmdclass={"build_py": BuildPyWithJar})
