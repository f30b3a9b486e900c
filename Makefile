# skewagg: `make help` lists the targets. Every target sets up what it needs (idempotent).
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Recipes that start a JVM outside sbt run under a JDK 17 (build/require-jdk17 finds or installs one).
WITH_JDK17 = JAVA_HOME="$$(build/require-jdk17)" && export JAVA_HOME && export PATH="$$JAVA_HOME/bin:$$PATH" &&

.PHONY: help setup jar test test-scala test-python demo bench fuzz docs clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

$(VENV)/.installed: requirements-test.txt pyproject.toml setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-test.txt
	$(PY) -m pip install -q --no-deps -e .
	touch $@

setup: $(VENV)/.installed ## JDK 17 (installed if missing), sbt, the jar, a .venv with pyspark, pytest, chispa and skewagg
	$(MAKE) --no-print-directory jar

jar: ## build the extension jar into python/skewagg/jars/
	build/package-jar

test: setup ## run every test: Scala, then Python (the command CI runs)
	$(MAKE) --no-print-directory test-scala
	$(MAKE) --no-print-directory test-python

test-scala: ## Scala tests (sbt, forked JVM)
	build/sbt test

test-python: setup ## Python tests (pytest + chispa), including spark-submit and local-cluster runs
	$(WITH_JDK17) $(PY) -m pytest tests

demo: setup ## the main job: a skewed aggregation run with skewagg off and on
	$(WITH_JDK17) $(PY) -m skewagg demo

bench: setup ## benchmark suite (20M rows ~45 min, then holistic aggregates at 10M rows ~30 min, 2 cores): benchmarks/results/*.json, docs/benchmarks.md
	$(WITH_JDK17) $(PY) benchmarks/bench.py $(BENCH_ARGS)
	$(WITH_JDK17) $(PY) benchmarks/bench.py --scenarios percentile,collect-list,high-cardinality --rows 10000000 $(BENCH_HOLISTIC_ARGS)

SEED ?= 1
CASES ?= 500
fuzz: ## randomized differential cases, skewagg off vs on (SEED=1 CASES=500); prints a repro per failure
	build/sbt "Test/runMain org.apache.spark.sql.skewagg.fuzz.FuzzRunner --seed $(SEED) --cases $(CASES)"

docs: setup ## regenerate docs/configs.md, and docs/*.md from docs/src (examples run on small data, PNGs)
	build/sbt "Test/runMain org.apache.spark.sql.skewagg.GenerateConfigDocs"
	$(WITH_JDK17) $(PY) docs/generate.py

clean: ## remove build output (keeps .venv and the sbt launcher)
	rm -rf target project/target project/project python/skewagg/jars/*.jar *.egg-info python/*.egg-info spark-warehouse
