"""skewagg's version: one for the package and every jar (build.sbt and pyproject.toml read it
here, so nothing else in the package rebuilds a jar when it changes)."""

__version__ = "0.1.0"
