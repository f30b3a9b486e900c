# skewagg: `make help` lists the targets. Every target sets up what it needs (idempotent).
# SPARK_LINE picks the Spark line a target runs on (default: the newest in build/spark-lines):
#   SPARK_LINE=4.1 make demo
SHELL := /bin/bash
.DEFAULT_GOAL := help

SPARK_LINES := $(shell build/spark-venv --lines)
SPARK_LINE ?= $(lastword $(SPARK_LINES))
# The line's virtualenv and sbt project.
VENV := .venvs/spark-$(SPARK_LINE)
PY := $(VENV)/bin/python
SBT_PROJECT := spark$(subst .,,$(SPARK_LINE))
# Recipes that start a JVM outside sbt run under a JDK 17 (build/require-jdk17 finds or installs one).
WITH_JDK17 = JAVA_HOME="$$(build/require-jdk17)" && export JAVA_HOME && export PATH="$$JAVA_HOME/bin:$$PATH" &&

.PHONY: help setup setup-lines jar dist publish-local check-dist test test-full lint format test-scala \
  test-python test-line demo bench bench-default advise-check fuzz docs clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'
	@echo "  Spark lines: $(SPARK_LINES) (SPARK_LINE=... picks one; default $(lastword $(SPARK_LINES)))"

# A line's jar is rebuilt when a source of its changed since it was built (stamp .built-<line>).
JAR_SOURCES := $(shell find scala project/*.scala project/build.properties build.sbt build/spark-lines \
  python/skewagg/version.py LICENSE NOTICE -type f 2>/dev/null)
JARS_DIR := python/skewagg/jars
LINE_JAR_BUILT := $(JARS_DIR)/.built-$(SPARK_LINE)
ALL_JARS_BUILT := $(JARS_DIR)/.built-all

$(JARS_DIR)/.built-%: $(JAR_SOURCES)
	build/package-jar $*
	touch $@

# Every line's jar in one sbt run (each line's stamp too).
$(ALL_JARS_BUILT): $(JAR_SOURCES)
	build/package-jar
	touch $(foreach line,$(SPARK_LINES),$(JARS_DIR)/.built-$(line)) $@

# A line's virtualenv (build/spark-venv: its pyspark, the test tools) with skewagg installed
# editable: it reads the jars in python/skewagg/jars/.
.venvs/spark-%/.skewagg-installed: requirements-test.txt pyproject.toml setup.py build/spark-lines
	build/spark-venv $* >/dev/null
	.venvs/spark-$*/bin/python -m pip install -q --no-deps --no-build-isolation -e .
	touch $@

ALL_VENVS := $(foreach line,$(SPARK_LINES),.venvs/spark-$(line)/.skewagg-installed)

setup: $(LINE_JAR_BUILT) $(VENV)/.skewagg-installed ## JDK 17 (installed if missing), sbt, SPARK_LINE's jar and .venvs/spark-<line> (pyspark, pytest, chispa, skewagg)

# The virtualenvs all at once (mostly downloads) and, beside them, every jar built in one sbt run
# (sbt's start and the Maven build need no venv; a line's compile waits for its venv's Spark
# jars); then skewagg installed in each venv.
setup-lines: ## what make test needs: setup for every Spark line
	@pids=(); for line in $(SPARK_LINES); do build/spark-venv $$line >/dev/null & pids+=($$!); done; \
	  $(MAKE) --no-print-directory $(ALL_JARS_BUILT) & pids+=($$!); \
	  status=0; for pid in "$${pids[@]}"; do wait $$pid || status=1; done; exit $$status
	@$(MAKE) --no-print-directory $(ALL_VENVS)

jar: ## build every Spark line's jar into python/skewagg/jars/ (one sbt run)
	build/package-jar
	touch $(foreach line,$(SPARK_LINES),$(JARS_DIR)/.built-$(line)) $(ALL_JARS_BUILT)

dist: $(ALL_JARS_BUILT) ## the release: dist/'s wheel (every line's jar inside; installs with no JDK or build), sdist, each line's jar on its own (dist/jars/, with SHA-256)
	build/dist

publish-local: ## every build's jar, sources and POM as io.skewagg:skewagg-spark<line>_<scala>:<version> in ~/.m2/repository (spark-submit --packages, sbt, Maven)
	build/sbt $(foreach p,$(ALL_SBT_PROJECTS),$(p)/publishM2)

CHECKS ?=
check-dist: dist ## the install paths users take, in fresh venvs: the wheel beside pyspark 3.5.9 and 4.3.0, a SPARK_HOME-only PySpark, an unsupported pyspark, --packages (CHECKS='pip-4.1 ...' picks)
	build/check-dist $(CHECKS)

test: setup-lines dist ## the README's test command, what CI runs: lint; every Scala suite on every line (slow tests and fuzz cases spread over them); the release's install paths (check-dist); Python on SPARK_LINE but slow tests, packaging tests on the others
	build/run-tests

test-full: setup-lines dist ## every test and every fuzz case on every line (run before resolving an issue that changes a rule or an operator)
	build/run-tests --full

# Every line's project: each formats the shared sources and its own shim directories.
SBT_PROJECTS := $(foreach line,$(SPARK_LINES),spark$(subst .,,$(line)))
# And the second builds of build/spark-lines' also-scala column (spark35_213).
ALL_SBT_PROJECTS := $(SBT_PROJECTS) $(shell grep -v '^\#' build/spark-lines | \
  awk 'NF >= 5 {split($$5, v, "."); l = $$1; gsub(/\./, "", l); print "spark" l "_" v[1] v[2]}')

lint: ## scalafmt (.scalafmt.conf) on every line's sources, no Scala or Python line over 100 columns, ruff and mypy (build/lint-python)
	build/check-lines
	build/lint-python
	build/sbt $(foreach p,$(SBT_PROJECTS),$(p)/scalafmtCheckAll)

format: ## apply scalafmt to every line's sources
	build/sbt $(foreach p,$(SBT_PROJECTS),$(p)/scalafmtAll)

test-scala: ## every Scala test and fuzz case on SPARK_LINE (SKEWAGG_TEST_SLICE=spread: its share of make test)
	build/sbt $(SBT_PROJECT)/test

PYTEST_ARGS ?=
test-python: setup ## every Python test on SPARK_LINE (pytest + chispa); PYTEST_ARGS='-m "not slow"' picks some
	$(WITH_JDK17) $(PY) -m pytest tests $(PYTEST_ARGS)

test-line: setup ## SPARK_LINE's part of make test: its share of the Scala tests and fuzz cases, the packaging tests
	@echo "== Spark $(SPARK_LINE): started $$(date -u +%H:%M:%S) UTC"
	SKEWAGG_TEST_SLICE=spread build/sbt $(SBT_PROJECT)/test
	$(WITH_JDK17) SKEWAGG_TEST_SLICE=spread $(PY) -m pytest tests -m "packaging and not slow and not cluster"

demo: setup ## the main job: a skewed aggregation run with skewagg off and on
	$(WITH_JDK17) $(PY) -m skewagg demo

bench: setup ## benchmark suite (20M rows ~70 min with the window scenarios, then holistic aggregates at 10M rows ~30 min, then windows Spark runs in one task at 20M rows, then aggregates over 4 keys at 20M rows in 2000 map tasks, 2 cores): benchmarks/results/*.json, docs/benchmarks.md
	$(WITH_JDK17) $(PY) benchmarks/bench.py $(BENCH_ARGS)
	$(WITH_JDK17) $(PY) benchmarks/bench.py --scenarios percentile,collect-list,high-cardinality --rows 10000000 $(BENCH_HOLISTIC_ARGS)
	$(WITH_JDK17) $(PY) benchmarks/bench.py --scenarios window-global,window-few-keys,window-moving,window-global-two-tasks $(BENCH_WINDOW_ARGS)
	$(WITH_JDK17) $(PY) benchmarks/bench.py --scenarios few-keys,few-keys-collect-set,few-keys-collect-list $(BENCH_FEW_KEYS_ARGS)

bench-default: setup ## skewagg's default plan against vanilla and against vanilla's own plan again (a control) in every local-global scenario, the order rotating (20M rows, 4 repeats: 58 min on 2 cores with two variants on 2026-11-27; the control adds half as many runs again)
	$(WITH_JDK17) $(PY) benchmarks/bench.py --default-plan --repeats 4 $(BENCH_ARGS)

# The scenarios skewagg rewrites, for the advisor's check.
ADVISE_SCENARIOS ?= join,repartition,bucketed,subset-key,distinct,distinct-many,distinct-many-repartition,window-sum,window-row-number
advise-check: setup ## the event-log advisor against the benchmark: 3 runs each of vanilla and skewagg@64 with event logs (~25 min, 2 cores), then its estimates beside the makespans measured (benchmarks/advise_check.py)
	rm -rf benchmarks/work/eventlogs
	$(WITH_JDK17) $(PY) benchmarks/bench.py --variants vanilla,skewagg@64 --repeats 3 \
	  --event-log benchmarks/work/eventlogs --scenarios $(ADVISE_SCENARIOS)
	$(PY) benchmarks/advise_check.py benchmarks/work/eventlogs

SEED ?= 1
CASES ?= 500
KIND ?= aggregate
fuzz: ## randomized differential cases, skewagg off vs on (SEED=1 CASES=500 KIND=aggregate|window|optimizer-window|few-keys); a repro per failure
	build/sbt "$(SBT_PROJECT)/Test/runMain org.apache.spark.sql.skewagg.fuzz.FuzzRunner --seed $(SEED) --cases $(CASES) --kind $(KIND)"

docs: setup ## regenerate docs/configs.md, and docs/*.md from docs/src (examples run on small data, PNGs)
	build/sbt "$(SBT_PROJECT)/Test/runMain org.apache.spark.sql.skewagg.GenerateConfigDocs"
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
	  (apt-get update -qq && apt-get install -y -qq chromium)  # the advisor's screenshot
	$(WITH_JDK17) $(PY) docs/generate.py

clean: ## remove build output (keeps .venvs and the sbt launcher)
	rm -rf target project/target project/project python/skewagg/jars/*.jar *.egg-info python/*.egg-info spark-warehouse dist
