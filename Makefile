# skewagg: `make help` lists the targets. Every target sets up what it needs (idempotent).
# SPARK_LINE picks the Spark line a target runs on (default: the newest in build/spark-lines):
#   SPARK_LINE=4.1 make demo
SHELL := /bin/bash
.DEFAULT_GOAL := help

SPARK_LINES := $(shell build/spark-venv --lines)
SPARK_LINE ?= $(lastword $(SPARK_LINES))
OTHER_LINES := $(filter-out $(SPARK_LINE),$(SPARK_LINES))
# The line's virtualenv (build/spark-venv: its pyspark, the test tools) and sbt project.
VENV := .venvs/spark-$(SPARK_LINE)
PY := $(VENV)/bin/python
SBT_PROJECT := spark$(subst .,,$(SPARK_LINE))
# Recipes that start a JVM outside sbt run under a JDK 17 (build/require-jdk17 finds or installs one).
WITH_JDK17 = JAVA_HOME="$$(build/require-jdk17)" && export JAVA_HOME && export PATH="$$JAVA_HOME/bin:$$PATH" &&
# What `make test` runs on each line other than SPARK_LINE: every Scala suite (the fuzz slice
# and the kill switch's fuzz corpus at 100 cases each, the optimizer-built windows' at 20), and
# the Python tests of configure(), spark-submit --jars, local-cluster executors, the rules'
# differential runs and explanations.
LINE_FUZZ_CASES := 100
LINE_OPTIMIZER_WINDOW_CASES := 20
LINE_PYTHON_TESTS := tests/test_configure.py tests/test_spark_submit.py tests/test_jars.py \
  tests/test_session.py tests/test_join_skew_split.py tests/test_repartition_rule.py \
  tests/test_single_key.py tests/test_hints.py tests/test_explain.py tests/test_bridge.py

.PHONY: help setup jar wheel check-wheel test lint format test-scala test-python test-line test-lines demo bench fuzz docs clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'
	@echo "  Spark lines: $(SPARK_LINES) (SPARK_LINE=... picks one; default $(lastword $(SPARK_LINES)))"

# The jars are rebuilt when a source of theirs changed since the last build.
JAR_SOURCES := $(shell find scala project/*.scala project/build.properties build.sbt build/spark-lines \
  python/skewagg/__init__.py -type f 2>/dev/null)
JARS_BUILT := python/skewagg/jars/.built

$(JARS_BUILT): $(JAR_SOURCES)
	build/package-jar
	touch $@

$(VENV)/.skewagg-installed: requirements-test.txt pyproject.toml setup.py build/spark-lines $(JARS_BUILT)
	build/spark-venv $(SPARK_LINE) >/dev/null
	$(PY) -m pip install -q --no-deps -e .
	touch $@

setup: $(JARS_BUILT) $(VENV)/.skewagg-installed ## JDK 17 (installed if missing), sbt, every line's jar, .venvs/spark-<line> with pyspark, pytest, chispa and skewagg

jar: ## build every Spark line's jar into python/skewagg/jars/ (one sbt run)
	build/package-jar
	touch $(JARS_BUILT)

wheel: jar ## one wheel with every line's jar: dist/skewagg-<version>-py3-none-any.whl
	build/spark-venv $(SPARK_LINE) >/dev/null
	$(PY) -m pip install -q build
	rm -rf dist && $(PY) -m build --wheel --outdir dist .
	@ls -l dist/*.whl

check-wheel: wheel ## per Spark line: a fresh venv with its pyspark, the wheel installed, a skewed join and percentile off/on
	build/check-wheel

test: setup ## lint, then every test: Scala and Python on SPARK_LINE, then each other line's slice (the command CI runs)
	$(MAKE) --no-print-directory lint
	@echo "== Spark $(SPARK_LINE): every test, started $$(date -u +%H:%M:%S) UTC"
	$(MAKE) --no-print-directory test-scala
	$(MAKE) --no-print-directory test-python
	$(MAKE) --no-print-directory test-lines

# Every line's project: each formats the shared sources and its own shim directories.
SBT_PROJECTS := $(foreach line,$(SPARK_LINES),spark$(subst .,,$(line)))

lint: ## scalafmt (.scalafmt.conf) on every line's sources, and no Scala or Python line over 100 columns
	build/check-lines
	build/sbt $(foreach p,$(SBT_PROJECTS),$(p)/scalafmtCheckAll)

format: ## apply scalafmt to every line's sources
	build/sbt $(foreach p,$(SBT_PROJECTS),$(p)/scalafmtAll)

test-scala: ## Scala tests on SPARK_LINE (sbt, forked JVM)
	build/sbt $(SBT_PROJECT)/test

test-python: setup ## Python tests on SPARK_LINE (pytest + chispa), including spark-submit and local-cluster runs
	$(WITH_JDK17) $(PY) -m pytest tests

test-lines: ## the slice of tests each line other than SPARK_LINE runs
	set -e; for line in $(OTHER_LINES); do $(MAKE) --no-print-directory test-line SPARK_LINE=$$line; done
	@echo "== every line tested, $$(date -u +%H:%M:%S) UTC"

test-line: setup ## one line's slice: every Scala suite (fuzz corpora at 100 cases) and the Python tests above
	@echo "== Spark $(SPARK_LINE): slice started $$(date -u +%H:%M:%S) UTC"
	SKEWAGG_FUZZ_CASES=$(LINE_FUZZ_CASES) SKEWAGG_KILLSWITCH_CASES=$(LINE_FUZZ_CASES) \
	  SKEWAGG_FUZZ_OPTIMIZER_WINDOW_CASES=$(LINE_OPTIMIZER_WINDOW_CASES) build/sbt $(SBT_PROJECT)/test
	$(WITH_JDK17) $(PY) -m pytest $(LINE_PYTHON_TESTS)

demo: setup ## the main job: a skewed aggregation run with skewagg off and on
	$(WITH_JDK17) $(PY) -m skewagg demo

bench: setup ## benchmark suite (20M rows ~70 min with the window scenarios, then holistic aggregates at 10M rows ~30 min, 2 cores): benchmarks/results/*.json, docs/benchmarks.md
	$(WITH_JDK17) $(PY) benchmarks/bench.py $(BENCH_ARGS)
	$(WITH_JDK17) $(PY) benchmarks/bench.py --scenarios percentile,collect-list,high-cardinality --rows 10000000 $(BENCH_HOLISTIC_ARGS)

SEED ?= 1
CASES ?= 500
KIND ?= aggregate
fuzz: ## randomized differential cases, skewagg off vs on (SEED=1 CASES=500 KIND=aggregate|window|optimizer-window); a repro per failure
	build/sbt "$(SBT_PROJECT)/Test/runMain org.apache.spark.sql.skewagg.fuzz.FuzzRunner --seed $(SEED) --cases $(CASES) --kind $(KIND)"

docs: setup ## regenerate docs/configs.md, and docs/*.md from docs/src (examples run on small data, PNGs)
	build/sbt "$(SBT_PROJECT)/Test/runMain org.apache.spark.sql.skewagg.GenerateConfigDocs"
	$(WITH_JDK17) $(PY) docs/generate.py

clean: ## remove build output (keeps .venvs and the sbt launcher)
	rm -rf target project/target project/project python/skewagg/jars/*.jar *.egg-info python/*.egg-info spark-warehouse dist
