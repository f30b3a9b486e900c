"""skewagg.stage_report: per-stage task numbers and simulated makespans of a user's query."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import skewagg
from skewagg.advisor.makespan import QueryTimes, StageTimes
from skewagg.stage_report import StageReport


def fake(spark: SparkSession, label: str, durations: list) -> StageReport:
    report = StageReport(spark, slots=(2, 64), label=label)
    report.times = QueryTimes([
        StageTimes(0, 0, "scan", [10, 10, 40], [100, 100, 400], [1000, 1000, 4000]),
        StageTimes(1, 0, "agg", durations, [1] * len(durations), [0] * len(durations)),
    ])
    return report


def test_numbers_per_stage_and_makespans(spark: SparkSession) -> None:
    report = fake(spark, "before", [5, 5])
    rows = report.rows()
    assert rows[0]["tasks"] == 3 and rows[0]["max_ms"] == 40 and rows[0]["median_ms"] == 10
    assert rows[0]["max_records"] == 400 and rows[0]["median_records"] == 100
    assert rows[0]["records"] == 600 and rows[0]["bytes"] == 6000
    # On 2 slots: 10 | 10, then 40 starts at 10 -> 50. On 64 slots the hot task decides: 40.
    assert rows[0]["makespan_ms_2"] == 50 and rows[0]["makespan_ms_64"] == 40
    assert report.makespan(2) == 50 + 5 and report.makespan(64) == 40 + 5
    text = str(report)
    assert "makespan@2" in text and "makespan@64" in text and "55 ms" in text
    assert "<table>" in report._repr_html_()
    assert report.to_pandas()["tasks"].tolist() == [3, 2]


def test_plots_one_report_and_a_comparison(spark: SparkSession, tmp_path: Path) -> None:
    before, after = fake(spark, "off", [5, 90]), fake(spark, "on", [5, 9])
    assert len(before.plot().axes) == 1
    fig = before.plot(str(tmp_path / "cmp.png"), compare=after)
    assert len(fig.axes) == 2 and (tmp_path / "cmp.png").stat().st_size > 1000


def test_records_a_real_query_in_a_with_block_and_as_a_call(spark: SparkSession) -> None:
    df = spark.range(0, 1000, 1, 4).groupBy((F.col("id") % 3).alias("k")).count()
    with skewagg.stage_report(spark) as report:
        assert len(df.collect()) == 3
    scan = report.stages[0]
    assert len(scan.durations_ms) == 4 and sum(scan.records) == 1000
    assert report.rows()[0]["tasks"] == 4
    # A new DataFrame: running `df` again would reuse its finished shuffle (skipped stages).
    again = spark.range(0, 1000, 1, 4).groupBy((F.col("id") % 3).alias("k")).count()
    called = skewagg.stage_report(spark, again.collect, slots=[8])
    assert called.slots == (8,) and sum(len(s.durations_ms) for s in called.stages) >= 4
    with pytest.raises(RuntimeError, match="nothing recorded yet"):
        skewagg.stage_report(spark).rows()
    with pytest.raises(ValueError, match="slots"):
        skewagg.stage_report(spark, slots=[0])
