"""python -m skewagg analyze on Parquet and CSV files (a child process with its own Spark)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from subprocesses import Started, child_env

# k: a x6, b x2, c x1, d x1 (the hand-computed set of test_report.py).
ROWS = [(k, i) for i, k in enumerate(["a"] * 6 + ["b"] * 2 + ["c", "d"])]


@pytest.fixture(scope="module")
def files(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("analyze")
    df = spark.createDataFrame(ROWS, "k string, v long").coalesce(1)
    df.write.parquet(str(root / "data.parquet"))
    df.write.option("header", "true").csv(str(root / "data.csv"))
    return root


def analyze(*args: str) -> Started:
    """`python -m skewagg analyze` with `args`, started now; `.result()` waits for it."""
    return Started([sys.executable, "-m", "skewagg", "analyze", *args],
                   env=child_env(MPLBACKEND="Agg"))


@pytest.mark.slow
def test_parquet_with_a_plot(files: Path) -> None:
    png = files / "skew.png"
    proc = analyze(str(files / "data.parquet"), "--keys", "k", "--partitions", "4",
                   "--plot", str(png)).result()
    assert proc.returncode == 0, proc.stderr
    assert "rows                  10" in proc.stdout
    assert "top-1 key share       60.0%" in proc.stdout
    assert "hash partitions       4 (num_partitions)" in proc.stdout
    assert png.stat().st_size > 1000


def test_csv_and_a_bad_key(files: Path) -> None:
    # Three children at once (each is mostly its JVM starting).
    good = analyze(str(files / "data.csv"), "--keys", "k", "--format", "csv", "--top", "1")
    bad = analyze(str(files / "data.csv"), "--keys", "nope", "--format", "csv")
    missing = analyze(str(files / "none.parquet"), "--keys", "k")
    proc = good.result()
    assert proc.returncode == 0, proc.stderr
    assert "distinct keys         4 (exact)" in proc.stdout
    bad_proc = bad.result()
    assert bad_proc.returncode == 2
    assert "skewagg: key column 'nope' is not a column of the DataFrame. Available columns: k, v" \
        in bad_proc.stderr
    assert "Traceback" not in bad_proc.stderr
    missing_proc = missing.result()
    assert missing_proc.returncode == 2 and "no such file or directory" in missing_proc.stderr
