"""Builds the extension jar (build/package-jar) when `pip install .` runs from a checkout that has
none yet, so the wheel always carries it. Everything else is in pyproject.toml."""

import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildPyWithJar(build_py):
    def run(self) -> None:
        jars = ROOT / "python" / "skewagg" / "jars"
        script = ROOT / "build" / "package-jar"
        if not list(jars.glob("skewagg-spark*.jar")) and script.exists():
            subprocess.run(["bash", str(script)], check=True)
        super().run()


setup(cmdclass={"build_py": BuildPyWithJar})
