"""The skew test's shared cases (tests/data/skew_test_vectors.json), evaluated by the Python code
the event-log advisor runs without a JVM; the Scala suite SkewTestVectorsSuite evaluates the same
file with the rules' SkewedPartitions and, for the cases in rows, GroupsBeyondShuffleKeys;
WindowSplitPlanSuite evaluates the window split's cost cases with WindowSplitPlan. No Spark
session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skewagg.advisor.skew_rule import (
    SkewSettings,
    default_settings,
    find_skewed,
    measure_rows,
    piece_size,
)
from skewagg.advisor.window_cost import window_split_cost
from skewagg.errors import SkewAggError

VECTORS = json.loads((Path(__file__).resolve().parent / "data" / "skew_test_vectors.json")
                     .read_text())
CASES = VECTORS["cases"]
ROWS_CASES = VECTORS["rowsCases"]
WINDOW_COST_CASES = VECTORS["windowSplitCostCases"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_shared_case(case: dict) -> None:
    settings = SkewSettings.of(case["conf"])
    found = find_skewed(case["sizes"], settings, case["slots"])
    assert [i for i, _ in found.skewed] == case["skewed"]
    assert found.median == case["median"]
    assert found.threshold == case["threshold"]
    assert piece_size(case["sizes"], found, settings) == case["pieceSize"]


@pytest.mark.parametrize("case", ROWS_CASES, ids=[c["name"] for c in ROWS_CASES])
def test_shared_rows_case(case: dict) -> None:
    settings = SkewSettings.of(case["conf"])
    measured = measure_rows(case["bytes"], case["records"], case["dataSize"], settings,
                            case["slots"])
    assert [i for i, _ in measured.found.skewed] == case["skewed"]
    assert measured.found.median == case["median"]
    assert measured.found.threshold == case["threshold"]
    assert measured.in_rows == (case["records"] > 0)
    assert measured.split_size(settings) == case["pieceSize"]


@pytest.mark.parametrize("case", WINDOW_COST_CASES, ids=[c["name"] for c in WINDOW_COST_CASES])
def test_shared_window_split_cost_case(case: dict) -> None:
    settings = SkewSettings.of(case["conf"])
    found = find_skewed(case["sizes"], settings, case["slots"])
    assert [i for i, _ in found.skewed] == case["skewed"]
    cost = window_split_cost(case["sizes"], found, settings, case["maps"], case["global"])
    assert cost.pays == case["pays"]
    for stage in ("sparkStage", "sample", "route", "evaluate", "split"):
        measured = getattr(cost, {"sparkStage": "spark_stage"}.get(stage, stage))
        assert measured == pytest.approx(case[stage], rel=1e-9), stage


def test_cases_cover_both_outcomes() -> None:
    for cases in (CASES, ROWS_CASES):
        assert any(c["skewed"] for c in cases) and any(not c["skewed"] for c in cases)
    assert any(c["pays"] for c in WINDOW_COST_CASES)
    assert any(not c["pays"] for c in WINDOW_COST_CASES)


def test_rows_find_what_bytes_miss() -> None:
    """The distinct-many case: its hot partition is below the floor in bytes, skewed in rows."""
    case = ROWS_CASES[0]
    settings = SkewSettings.of(case["conf"])
    assert not find_skewed(case["bytes"], settings, case["slots"]).skewed
    assert measure_rows(case["bytes"], case["records"], case["dataSize"], settings,
                        case["slots"]).found.skewed


def test_defaults_are_the_generated_ones() -> None:
    defaults = default_settings()
    assert {"spark.skewagg.skew.factor", "spark.skewagg.skew.minPartitionSize",
            "spark.skewagg.skew.minSplitSize", "spark.skewagg.skew.taskSlots"} <= set(defaults)
    settings = SkewSettings.of()
    assert settings.floor == 16 << 20 and settings.factor == 5.0
    assert settings.window_min_rows == settings.single_key_min_rows == 1_000_000
    assert settings.local_capacity == 16384 and settings.min_merge_reduction == 3.0


def test_bad_settings_name_the_key() -> None:
    with pytest.raises(SkewAggError, match="spark.skewagg.skew.factor"):
        SkewSettings.of({"spark.skewagg.skew.factor": "0.5"})
    with pytest.raises(SkewAggError, match="spark.skewagg.skew.taskSlots"):
        SkewSettings.of({"spark.skewagg.skew.taskSlots": "many"})
    with pytest.raises(SkewAggError, match="spark.skewagg.localAggregate.minMergeReduction"):
        SkewSettings.of({"spark.skewagg.localAggregate.minMergeReduction": "0.9"})
    with pytest.raises(SkewAggError, match="spark.skewagg.window.split.sampleFraction"):
        SkewSettings.of({"spark.skewagg.window.split.sampleFraction": "0"})
