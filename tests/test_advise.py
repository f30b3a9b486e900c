"""The event-log advisor (``skewagg.advise``, ``python -m skewagg advise``): real event logs of
skewed and uniform queries, written by vanilla Spark (no skewagg) in a child process, and the
committed logs of every supported Spark line (tests/eventlogs/). The advisor itself runs here
without a Spark session."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest

from skewagg.advisor import AdviceReport, StageAdvice, advise
from skewagg.advisor.eventlog import EventLogError, find_logs, lzf_decompress, read_lines
from skewagg.errors import SkewAggError
from subprocesses import APPS, Started, child_env, report

FIXTURES = Path(__file__).resolve().parent / "eventlogs"
LINES = ["3.5", "4.0", "4.1", "4.2", "4.3"]

# The test data is small (200,000 rows, 40% on one key, 16 partitions): thresholds lowered to it,
# as the other tests do; planned for 64 task slots as in conftest's session.
SMALL = {
    "spark.skewagg.skew.minPartitionSize": "64k",
    "spark.skewagg.skew.minSplitSize": "32k",
    "spark.skewagg.window.split.minKeyRows": "1000",
    "spark.skewagg.singleKey.split.minKeyRows": "1000",
}

EXPECTED = {  # query -> (operator, the rewrite's rule)
    "join": ("aggregate over a join", "LocalAggregateBeforeJoin"),
    "repartition": ("aggregate over a repartition", "PartialAggregateBeforeRepartition"),
    "percentile": ("holistic aggregate", "HotKeySplitAggregate"),
    "window": ("window", "SplitSkewedWindow"),
}


def by_query(result: AdviceReport) -> Dict[str, List[StageAdvice]]:
    found: Dict[str, List[StageAdvice]] = {}
    for stage in result.stages:
        found.setdefault(stage.description.rsplit(" ", 1)[-1], []).append(stage)
    return found


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Path]:
    """Event logs of the four queries on skewed and on uniform data (two applications run at
    the same time, vanilla Spark, the running line's default event-log codec)."""
    root = tmp_path_factory.mktemp("eventlogs")
    runs = {kind: Started([sys.executable, str(APPS / "event_log_queries.py"), str(root / kind)]
                          + (["--uniform"] if kind == "uniform" else []))
            for kind in ("skewed", "uniform")}
    for kind, run in runs.items():
        assert report(run.result())["rows"]["join"] > 0, kind
    return {kind: root / kind for kind in runs}


def assert_names_each_rewrite(result: AdviceReport) -> None:
    found = by_query(result)
    assert set(found) == set(EXPECTED), str(result)
    for query, (operator, rule) in EXPECTED.items():
        stages = found[query]
        assert len(stages) == 1, str(result)
        stage = stages[0]
        assert stage.operator == operator, str(result)
        assert stage.rewrite is not None and rule in stage.rewrite, str(result)
        assert stage.decision.startswith("would rewrite: "), stage.decision
        # A rewrite of a skewed stage estimates it no longer; shorter, and the query with it,
        # where a skewed task is the stage's longest (on this little data another task may be).
        assert stage.skewed_tasks and stage.estimated_ms <= stage.makespan_ms, str(result)
        assert stage.query_estimated_ms <= stage.query_makespan_ms, str(result)
        longest = max(stage.durations_ms)
        if any(stage.durations_ms[i] == longest for i in stage.skewed_tasks):
            assert stage.estimated_ms < stage.makespan_ms, str(result)
            assert stage.query_estimated_ms < stage.query_makespan_ms, str(result)
        assert stage.estimate.startswith("tasks list-scheduled in task order on 64 slots")


def test_skewed_queries_name_the_operator_and_the_rewrite(logs: Dict[str, Path]) -> None:
    result = advise(str(logs["skewed"]), task_slots=64, conf=SMALL)
    assert not result.errors
    assert_names_each_rewrite(result)
    assert "would rewrite" in str(result) and "estimate" in str(result)


def test_uniform_data_reports_nothing(logs: Dict[str, Path]) -> None:
    # On half as many slots as the log's 16 shuffle partitions: each about half an even share.
    # (On 64 slots the larger of them pass 5x the per-slot share: fewer keys than slots.)
    result = advise([str(logs["uniform"])], task_slots=8, conf=SMALL)
    assert len(result.applications) == 1 and not result.errors
    assert result.stages == [], str(result)
    assert "no stage is skewed" in str(result)


def test_default_settings_give_the_refusals_and_why(logs: Dict[str, Path]) -> None:
    found = by_query(advise(str(logs["skewed"]), task_slots=64))
    # Local aggregation is planned whatever the sizes; the splits wait for the thresholds.
    assert "LocalAggregateBeforeJoin" in (found["join"][0].rewrite or "")
    window = found["window"][0]
    assert window.rewrite is None and window.estimated_ms == window.makespan_ms
    assert "below the 16.0 MiB floor (spark.skewagg.skew.minPartitionSize)" in window.decision
    percentile = found["percentile"][0]
    assert percentile.rewrite is None
    assert "under spark.skewagg.singleKey.split.minKeyRows=1000000" in percentile.decision


def test_the_applications_own_slots(logs: Dict[str, Path]) -> None:
    # local[2]: on 2 slots no partition outlasts an even share, as the rules decide.
    result = advise(str(logs["skewed"]), conf=SMALL)
    assert [a[3] for a in result.applications] == [2]
    assert result.stages == []


def plain_copy(src: Path, dest: Path) -> List[str]:
    """The lines of the event log at ``src`` (any codec), written uncompressed to ``dest``."""
    lines = [text for _, files in find_logs([str(src)]) for _, _, text in read_lines(files)]
    dest.write_text("\n".join(lines) + "\n")
    return lines


def test_a_corrupt_or_truncated_log_names_file_and_line(
        logs: Dict[str, Path], tmp_path: Path) -> None:
    lines = plain_copy(logs["skewed"], tmp_path / "good")
    corrupt = tmp_path / "corrupt"
    corrupt.write_text("\n".join(lines[:10] + ["{not json"] + lines[10:]) + "\n")
    truncated = tmp_path / "truncated"
    truncated.write_text("\n".join(lines[:40]) + "\n" + lines[40][: len(lines[40]) // 2])
    result = advise([str(corrupt), str(truncated), str(tmp_path / "good")], task_slots=64,
                    conf=SMALL)
    assert sorted((Path(e.path).name, e.line) for e in result.errors) == [
        ("corrupt", 11), ("truncated", 41)]
    assert all("truncated or corrupt" in str(e) for e in result.errors)
    assert f"{corrupt}, line 11: not a JSON event" in str(result)
    assert_names_each_rewrite(result)  # the good log is still reported


def test_a_truncated_compressed_log(tmp_path: Path) -> None:
    source = next((FIXTURES / "spark-3.5").glob("*.lz4"))
    cut = tmp_path / source.name
    cut.write_bytes(source.read_bytes()[: source.stat().st_size // 2])
    with pytest.raises(EventLogError, match=r"line \d+: cannot decompress \(lz4\).*truncated"):
        for _ in read_lines([str(cut)]):
            pass
    with pytest.raises(SkewAggError, match="no event log could be read"):
        advise(str(cut))


@pytest.mark.parametrize("line", LINES)
def test_every_spark_lines_logs_parse(line: str) -> None:
    """Logs each supported line wrote (tests/eventlogs/README.md), in Spark's codecs."""
    result = advise(str(FIXTURES / f"spark-{line}"), task_slots=64, conf=SMALL)
    assert not result.errors
    assert_names_each_rewrite(result)


def test_codecs_of_the_fixtures() -> None:
    names = {p.name.rsplit(".", 1)[-1] for p in FIXTURES.rglob("*") if p.is_file()
             and p.name.startswith(("local-", "events_"))}
    assert {"lz4", "lzf", "snappy", "zstd"} <= names


def test_lzf_blocks() -> None:
    # A literal run of 3 bytes, then a back reference of 5 bytes at distance 3 (overlapping).
    assert lzf_decompress(bytes([2]) + b"abc" + bytes([(3 << 5) | 0, 2]), 8) == b"abcabcab"
    with pytest.raises(Exception, match="back reference"):
        lzf_decompress(bytes([(1 << 5), 9]), 3)


def test_report_object(logs: Dict[str, Path], tmp_path: Path) -> None:
    result = advise(str(logs["skewed"]), task_slots=64, conf=SMALL)
    frame = result.to_pandas()
    assert set(frame["operator"]) == {op for op, _ in EXPECTED.values()}
    assert (frame["stage_estimated_ms"] <= frame["stage_makespan_ms"]).all()
    assert (frame["stage_estimated_ms"] < frame["stage_makespan_ms"]).any()
    assert "<table" in result._repr_html_()
    page = result.to_html(str(tmp_path / "report.html"))
    assert page.count("<img") == len(result.stages) == 4
    figure = result.plot(str(tmp_path / "stages.png"))
    assert len(figure.axes) == 4 and (tmp_path / "stages.png").stat().st_size > 0


@pytest.mark.packaging
def test_cli_runs_without_java(tmp_path: Path) -> None:
    plain = tmp_path / "logs"
    plain.mkdir()
    plain_copy(FIXTURES / "spark-3.5", plain / "app-skewed")
    (plain / "broken").write_text('{"Event":"SparkListenerLogStart"}\n{"Event": \n')
    env = child_env()
    env.pop("JAVA_HOME", None)
    # Every directory holding a java (a JDK's bin, and /usr/bin where the system has one).
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep)
        if os.path.isdir(p) and shutil.which("java", path=p) is None)
    assert shutil.which("java", path=env["PATH"]) is None
    html = tmp_path / "advice.html"
    args = [sys.executable, "-m", "skewagg", "advise", str(plain), "--task-slots", "64",
            "--html", str(html)] + [f"--conf={k}={v}" for k, v in SMALL.items()]
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr  # one log could not be read
    assert f"{plain / 'broken'}, line 2: not a JSON event" in proc.stderr
    for operator, rule in EXPECTED.values():
        assert operator in proc.stdout and rule in proc.stdout, proc.stdout
    assert html.exists() and "<img" in html.read_text()
    bad = subprocess.run(args[:4] + [str(tmp_path / "missing")], env=env, capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 2 and "no such file or directory" in bad.stderr


def test_one_log_per_application(logs: Dict[str, Path]) -> None:
    # The child wrote exactly one application per run, and nothing else.
    for kind, path in logs.items():
        found = find_logs([str(path)])
        assert len(found) == 1, (kind, found)
        assert json.loads(next(read_lines(found[0][1]))[2])["Event"] == "SparkListenerLogStart"


# DISTINCT over a hot key of 20,000 rows' worth of values (tests/apps/event_log_queries.py): its
# partition is 0.5 MiB of shuffle bytes, under this floor, and 2 MiB of rows in memory, above it.
DISTINCT = {"spark.skewagg.skew.minPartitionSize": "1MB", "spark.skewagg.skew.minSplitSize": "32k"}


@pytest.fixture(scope="module")
def distinct_logs(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Path]:
    """Event logs of countDistinct(i) by k after a join and after repartition(k), skewed and
    uniform (vanilla Spark)."""
    root = tmp_path_factory.mktemp("distinct-eventlogs")
    runs = {kind: Started([sys.executable, str(APPS / "event_log_queries.py"), str(root / kind),
                           "--queries", "distinct-join,distinct-repartition"]
                          + (["--uniform"] if kind == "uniform" else []))
            for kind in ("skewed", "uniform")}
    for kind, run in runs.items():
        assert report(run.result())["rows"]["distinct-join"] > 0, kind
    return {kind: root / kind for kind in runs}


def test_distinct_over_a_hot_key_is_split_in_rows(distinct_logs: Dict[str, Path]) -> None:
    found = by_query(advise(str(distinct_logs["skewed"]), task_slots=64, conf=DISTINCT))
    assert set(found) == {"distinct-join", "distinct-repartition"}
    join = found["distinct-join"][0]
    assert join.operator == "aggregate over a join"
    assert max(join.sizes) < 1 << 20  # below the floor in bytes
    assert join.rewrite is not None and "SplitSkewedJoinBelowAggregate" in join.rewrite
    assert "LocalAggregateBeforeJoin" in join.rewrite and "counted in rows" in join.rewrite
    assert "rows, " in join.decision and "pieces" in join.decision
    repartition = found["distinct-repartition"][0]
    assert repartition.rewrite is not None
    assert "PartialAggregateBeforeRepartition" in repartition.rewrite
    assert "SplitSkewedShuffleBelowAggregate" in repartition.rewrite
    for stage in (join, repartition):
        # Pieces of tasks this short cost about what the task did: no saving is promised.
        assert 0 < stage.estimated_ms
        assert "an even share of the rest of its time" in stage.estimate
        assert "regrouped on all the grouping keys" in stage.estimate
    # In bytes alone, as before the rows test, the same partitions are under the floor.
    bytes_only = by_query(advise(str(distinct_logs["skewed"]), task_slots=64,
                                 conf={**DISTINCT, "spark.skewagg.skew.minPartitionSize": "16MB"}))
    assert "Split" not in (bytes_only["distinct-join"][0].rewrite or "")
    assert "below the 16.0 MiB floor" in bytes_only["distinct-join"][0].decision


def test_distinct_on_uniform_data_reports_nothing(distinct_logs: Dict[str, Path]) -> None:
    result = advise(str(distinct_logs["uniform"]), task_slots=8, conf=DISTINCT)  # (as above)
    assert not result.errors and result.stages == [], str(result)


def _bucketed_log(path: Path, records: List[int]) -> None:
    """A log of one bucketed aggregate's stage, one task per bucket reading ``records`` rows, each
    task's "bytes read" 5 KB (as Parquet's vectorized reader can report); the scan's files hold
    100 MB ("size of files read", a metric the driver sets)."""
    scan = {"nodeName": "Scan parquet default.t", "simpleString": "FileScan parquet default.t",
            "metadata": {"Bucketed": "true"},
            "metrics": [{"name": "size of files read", "accumulatorId": 7},
                        {"name": "number of output rows", "accumulatorId": 8}], "children": []}
    plan = {"nodeName": "HashAggregate", "simpleString": "HashAggregate(keys=[k], "
            "functions=[sum(v)])", "metrics": [{"name": "number of output rows",
                                                "accumulatorId": 9}], "children": [scan]}
    events: List[dict] = [
        {"Event": "SparkListenerApplicationStart", "App ID": "app-1", "App Name": "bucketed"},
        {"Event": "SparkListenerExecutorAdded", "Executor ID": "1",
         "Executor Info": {"Total Cores": 2}},
        {"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart",
         "executionId": 0, "description": "bucketed", "sparkPlanInfo": plan},
        {"Event": "org.apache.spark.sql.execution.ui.SparkListenerDriverAccumUpdates",
         "executionId": 0, "accumUpdates": [[7, 100 << 20]]},
        {"Event": "SparkListenerJobStart", "Stage IDs": [0],
         "Properties": {"spark.sql.execution.id": "0"}}]
    for i, n in enumerate(records):
        events.append({"Event": "SparkListenerTaskEnd", "Stage ID": 0, "Stage Attempt ID": 0,
                       "Task End Reason": {"Reason": "Success"},
                       "Task Info": {"Index": i, "Launch Time": 0, "Finish Time": n // 1000,
                                     "Accumulables": [{"ID": 8, "Update": n},
                                                      {"ID": 9, "Update": 100}]},
                       "Task Metrics": {"Input Metrics": {"Bytes Read": 5000,
                                                          "Records Read": n}}})
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")


def test_buckets_weighed_by_the_size_of_the_files_the_scan_read(tmp_path: Path) -> None:
    """A bucketed scan's tasks are weighed as the rules weigh buckets, by their files: the scan's
    "size of files read" shared by the records each task read, not the tasks' own bytes read."""
    log = tmp_path / "local-1"
    _bucketed_log(log, [200_000] * 63 + [6_000_000])
    [stage] = advise(str(log), task_slots=64).stages
    assert stage.operator == "aggregate over a bucketed scan"
    assert stage.rewrite and "SplitSkewedBucketsBelowAggregate" in stage.rewrite, stage.decision
    assert stage.sizes[-1] == round((100 << 20) * 6_000_000 / (63 * 200_000 + 6_000_000))


def test_reduce_work_after_a_local_aggregate() -> None:
    """A reduce task's work with the local aggregate: its rows after it over its rows read, and
    where the partial rows are merged after a join's shuffle, the merge's rows and the join's and
    final aggregate's groups over the join's and aggregate's rows read."""
    from skewagg.advisor.estimates import merged_rows, reduce_work

    # 28,000 rows of 2,000 keys over 64 map tasks: few repeat within a map task.
    after = merged_rows(28_000, 2_000, 64, 16_384)
    assert 24_000 < after < 26_000
    assert reduce_work(28_000, after, 2_000, merged=False) == after / 28_000
    assert reduce_work(28_000, after, 2_000, merged=True) == pytest.approx(
        (after + 4_000) / 56_000)
    # A hot key: 64 partial rows of one key; merging cannot cost more than the rows read.
    assert reduce_work(1_000_000, 64, 1, merged=True) < 0.001
    assert reduce_work(100, 100, 100, merged=True) == 1.0


def test_a_hot_partition_is_a_typical_one_plus_its_hot_key() -> None:
    """The local aggregate's estimate of a partition holding a hot key: its rows beyond the median
    partition's merge by the hot key's own values, not by all the partition's groups; a hot key
    over more values than the local aggregate's map holds passes through."""
    from skewagg.advisor.estimates import after_local

    typical = (75_000.0, 65_000.0)  # rows, groups of the median partition
    # 6M rows more over 1,000 values of the hot key: one row per value and map task at most.
    few = after_local(6_075_000, 66_000, typical, 64, 16_384)
    assert few == 75_000 + 64 * 1_000  # the typical part's groups are beyond the map: kept
    # Over 100,000 values: more than the map holds, passed through.
    many = after_local(6_075_000, 165_000, typical, 64, 16_384)
    assert many == 6_075_000


def test_split_pieces_cost_the_shortest_task_each() -> None:
    from skewagg.advisor.decision import Decision
    from skewagg.advisor.estimates import estimate_makespan

    durations = [20] * 8 + [420]
    split = Decision("split", "", pieces={8: 10})
    assert estimate_makespan(durations, split, 64) == 20 + 400 / 10  # a piece
    apart = Decision("split", "", pieces={8: 10}, stages_apart=1)
    assert estimate_makespan(durations, apart, 64) == 20 + 60  # the others, then the pieces' stage
    regrouped = Decision("split", "", pieces={8: 10}, stages_apart=2)
    assert estimate_makespan(durations, regrouped, 64) == 20 + 2 * 60


def test_a_window_split_that_would_not_pay_is_not_advised() -> None:
    """The rules' cost test (WindowSplitCost): one task of 512 MiB on 64 slots is split when 200
    map tasks wrote it (pieces of one map output each), not when 2 did (each piece, sampled and
    routed, as long as half of Spark's one task)."""
    from dataclasses import replace

    from skewagg.advisor.decision import Decision, Measures, decide
    from skewagg.advisor.eventlog import PlanNode
    from skewagg.advisor.skew_rule import RowsMeasure, SkewSettings, find_skewed
    from skewagg.advisor.stage_plans import StagePlan

    desc = ("Window [row_number() windowspecdefinition(ts#1L ASC NULLS FIRST, "
            "specifiedwindowframe(RowFrame, unboundedpreceding$(), currentrow$())) AS rn#2], "
            "[ts#1L ASC NULLS FIRST]")
    plan = StagePlan(PlanNode("Window", desc, {}, {}), "Window", [], kind="window")
    settings = SkewSettings.of({"spark.skewagg.window.split.minKeyRows": "1000"})
    sizes, rows = [512 << 20], [4_000_000]
    # (a stage of one task: advise() marks it so)
    found = replace(find_skewed(sizes, settings, 64), whole_stage=True)
    bare = replace(find_skewed(sizes, settings, 64, floor=0), whole_stage=True)

    def decided(map_tasks: int) -> Decision:
        return decide(plan, sizes, rows, found, bare, settings, map_tasks, "the window's shuffle",
                      Measures(RowsMeasure(sizes, sizes, sizes, found, settings.floor,
                                           settings.min_split)))

    split = decided(200)
    assert split.rewrite is not None and "SplitSkewedWindow" in split.rewrite
    assert "the split takes about 0.06x of Spark's stage of 512.0 MiB on 64 slots" in split.text
    kept = decided(2)
    assert kept.rewrite is None and not kept.pieces
    assert kept.text.startswith("left alone: no PARTITION BY: Spark runs the window in one task")
    assert ("left to Spark's window: the split would take about 1.20x of Spark's stage of "
            "512.0 MiB on 64 slots: its sample's longest read 256.0 MiB") in kept.text, kept.text


def test_heavy_partial_states_of_a_few_keys_are_advised_merged_in_two_levels() -> None:
    """The rules' SplitMergeOfPartialStates: 4 keys' sketches from 2000 map tasks (128 KiB a
    state) in 200 partitions on 64 slots are merged in two levels; from 8 map tasks they are left
    alone (two levels would not pay); a sum's states of a few bytes: nothing to split; lists
    collected: left alone (their final merge reads every value)."""
    from skewagg.advisor.decision import Measures, decide
    from skewagg.advisor.eventlog import PlanNode
    from skewagg.advisor.skew_rule import RowsMeasure, SkewSettings, find_skewed
    from skewagg.advisor.stage_plans import StagePlan

    desc = "ObjectHashAggregate(keys=[k#1L], functions=[percentile_approx(x#2L, 0.5, 10000)])"
    plan = StagePlan(PlanNode("ObjectHashAggregate", desc, {}, {}), "aggregate", [],
                     kind="aggregate")
    settings = SkewSettings.of({"spark.skewagg.skew.taskSlots": "64"})
    sizes = [256 << 20 if i in (3, 50, 99, 120) else 0 for i in range(200)]

    def decided(states_per_partition: int, map_tasks: int):
        rows = [states_per_partition if size else 0 for size in sizes]
        found = find_skewed(sizes, settings, 64)
        bare = find_skewed(sizes, settings, 64, floor=0)
        measure = RowsMeasure(sizes, sizes, sizes, find_skewed(sizes, settings, 64),
                              settings.floor, settings.min_split)
        return decide(plan, sizes, rows, found, bare, settings, map_tasks, "the shuffle",
                      Measures(measure))

    merged = decided(2000, 2000)
    assert merged.rewrite == ("heavy partial states merged in two levels "
                              "(SplitMergeOfPartialStates)"), merged.text
    assert ("the final merge reads one partial state per map task and key, partition 3 holds "
            "256.0 MiB of the states of 2,000 map tasks (131.1 KiB a state), 16x the per-slot "
            "share 16.0 MiB on 64 task slots (and 3 more); read in up to 16 pieces of about "
            "16.0 MiB") in merged.text, merged.text
    assert merged.pieces == {3: 16, 50: 16, 99: 16, 120: 16} and merged.stages_apart == 1
    few = decided(8, 8)
    assert few.rewrite is None and ("at most 8 map tasks wrote to a skewed partition: a merge in "
                                    "two levels pays from 16.") in few.text, few.text
    sums = decided(16_000_000, 2000)
    assert sums.rewrite is None and "there is nothing to split" in sums.text, sums.text
    plan.top = PlanNode("ObjectHashAggregate", desc.replace("percentile_approx", "collect_list"),
                        {}, {})
    lists = decided(2000, 2000)
    assert lists.rewrite is None and "but collect_list's merge keeps every value" in lists.text


def test_a_window_without_partition_by_is_one_task_split_by_its_order(tmp_path: Path) -> None:
    """One task holds the whole table, on uniform data too: tested by the per-slot share alone,
    as SplitSkewedWindow tests it (never "not skewed" against a median of itself)."""
    run = Started([sys.executable, str(APPS / "event_log_queries.py"), str(tmp_path),
                   "--uniform", "--queries", "window-global"])
    assert report(run.result())["rows"]["window-global"] == 1
    found = by_query(advise(str(tmp_path), task_slots=64, conf=SMALL))
    assert set(found) == {"window-global"}, found
    window = found["window-global"][0]
    assert window.operator == "window" and len(window.sizes) == 1
    assert window.rewrite is not None and "SplitSkewedWindow" in window.rewrite
    assert "no PARTITION BY: Spark runs the window in one task (" in window.decision
    assert "x the per-slot share on 64 slots" in window.decision, window.decision
    assert window.estimated_ms < window.makespan_ms
    # On the application's own 2 slots one task is not 5x an even share: nothing to advise.
    assert advise(str(tmp_path), conf=SMALL).stages == []
