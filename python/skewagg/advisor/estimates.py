"""Estimates from a log's measured task times: a stage's makespan with a decision
(:func:`estimate_makespan`), and the shuffle skewagg's local aggregate would leave
(:func:`measure_shuffle`, on :func:`after_local` and :func:`merged_rows`)."""

from __future__ import annotations

import math
import statistics
from typing import List, Optional, Tuple

from skewagg.advisor.decision import Decision, Measures
from skewagg.advisor.eventlog import Application, Execution, PlanNode, Stage
from skewagg.advisor.makespan import makespan
from skewagg.advisor.skew_rule import SkewSettings, measure_rows
from skewagg.advisor.stage_plans import StagePlan, output_rows, written


def estimate_makespan(durations: List[int], decision: Decision, slots: int,
              fastest_elsewhere: Optional[float] = None) -> float:
    """The stage's makespan with ``decision``. Every task costs at least the stage's shortest
    task time (what any task costs). Where skewagg aggregates before the shuffle, a task takes
    that plus the rest of its time scaled by its work with skewagg over its work without
    (reduce-side work in proportion to the rows its operators read, :func:`reduce_work`), or the
    stage's median time where the rows are unknown. A split task's pieces take that shortest time
    each plus an even share of the rest of its time; where they run in stages apart
    (``stages_apart``), the split task leaves a task of the shortest time in this one, and each
    stage apart takes the pieces' times (the regrouping's at most that: it reads what the pieces'
    aggregation left). A stage of one task has no other task to tell what any task costs:
    ``fastest_elsewhere`` (the shortest task of the stage that wrote its shuffle) stands in."""
    if not decision.rewrite or not durations:
        return makespan(durations, slots)
    median = statistics.median(durations)
    fastest = float(min(durations))
    if len(durations) == 1 and fastest_elsewhere is not None:
        fastest = min(fastest, fastest_elsewhere)
    tasks: List[float] = []
    pieces: List[float] = []
    for i, d in enumerate(durations):
        t = float(d)
        if decision.local and decision.scale:
            t = min(t, fastest + (t - fastest) * decision.scale.get(i, 1.0))
        elif decision.local and i in decision.hot:
            t = min(t, median)
        k = decision.pieces.get(i, 1)
        if k == 1:
            tasks.append(t)
        elif decision.stages_apart:
            pieces += [fastest + (t - fastest) / k] * k
            tasks.append(fastest)
        else:
            tasks += [fastest + (t - fastest) / k] * k
    return makespan(tasks, slots) + decision.stages_apart * makespan(pieces, slots)



def after_local(read: int, groups: int, typical: Tuple[float, float], map_tasks: int,
                 capacity: int) -> int:
    """The rows a reduce task would read after the local aggregate: a partition of more rows than
    the ``typical`` one's (rows, groups: the stage's medians) is taken as that typical part plus
    its hot part, the rows beyond it over the groups beyond it (at least one: a hot key), each
    merged as :func:`merged_rows` estimates."""
    typical_read, typical_groups = typical
    if not 0 < typical_read < read or typical_groups <= 0:
        return merged_rows(read, groups, map_tasks, capacity)
    base_read, base_groups = int(typical_read), int(min(groups, typical_groups))
    return (merged_rows(base_read, base_groups, map_tasks, capacity)
            + merged_rows(read - base_read, max(1, groups - base_groups), map_tasks, capacity))


def merged_rows(read: int, groups: int, map_tasks: int, capacity: int) -> int:
    """The rows left after each map task merged its own rows by group: ``read`` rows of
    ``groups`` groups falling at random over ``map_tasks`` map tasks leave each map task the
    groups it saw, ``M G (1 - exp(-R / (M G)))`` in all (a hot key's rows become one row per map
    task; groups seen once per map task stay), between ``groups`` and ``read``. More groups than
    the flushing aggregate's map holds (``capacity``, spark.skewagg.localAggregate.capacity) keep
    their ``read`` rows: a hot key spread over more values than a batch sees is passed through.
    An estimate: the log counts neither the groups per map task nor how the rows were spread."""
    if groups <= 0 or read <= 0 or map_tasks <= 0 or groups > capacity:
        return read
    slots = map_tasks * groups
    return int(min(read, max(groups, round(-slots * math.expm1(-read / slots)))))


def measure_shuffle(app: Application, execution: Execution, stage: Stage, plan: StagePlan,
              sizes: List[int], rows: List[int], exchange: Optional[PlanNode],
              writer: Optional[Stage], settings: SkewSettings, slots: int) -> Measures:
    """The split rules' test of the shuffle this stage read (GroupsBeyondShuffleKeys.measure),
    on vanilla's shuffle and on the one skewagg's local aggregate before it would leave.

    The rules measure a materialized shuffle by its map outputs' bytes per partition, the
    records it wrote and its data size in memory (the stage's runtime statistics). The log holds
    the bytes each reduce task read (a partition's map outputs where a task reads one partition:
    here coalescing and Spark's skew split merge or cut them, and Spark averages the map
    statuses of shuffles over 2000 partitions, which the reads do not show) and the exchange's
    SQL metrics "shuffle records written" and "data size", summed over the map tasks: the very
    numbers of the rules' statistics. The rules count rows in proportion to bytes; the records
    each task read are exact, but the rules do not have them, so they are not used for the test.
    Without a data size (older logs) the test is in bytes, as the rules' without records."""
    records = written(writer, exchange, "shuffle records written") or sum(rows)
    data_size = written(writer, exchange, "data size")
    in_rows = plan.groups_beyond_keys and (plan.join is not None or plan.distinct)
    vanilla = measure_rows(sizes, records if in_rows else 0, data_size, settings, slots)
    if plan.first is None or writer is None or not any(rows):
        return Measures(vanilla)
    groups = output_rows(stage, plan.first)
    if not any(groups) or len(groups) != len(rows):
        return Measures(vanilla)
    typical = (statistics.median(rows), statistics.median(groups))
    after = [after_local(r, g, typical, len(writer.tasks), settings.local_capacity)
             for r, g in zip(rows, groups)]
    shrunk = {i: a / r for i, (a, r) in enumerate(zip(after, rows)) if r > 0}
    # The shuffle after the local aggregate: each partition's bytes and the shuffle's records
    # and data size shrunk with its rows.
    kept = sum(after) / max(sum(rows), 1)
    local_bytes = [round(b * shrunk.get(i, 1.0)) for i, b in enumerate(sizes)]
    local = measure_rows(local_bytes, round(records * kept) if in_rows else 0,
                         round(data_size * kept), settings, slots)
    # DropUnneededMergeAfterShuffle's test: the partial rows are merged after the join's shuffle
    # where they are at least minMergeReduction per key.
    merged = plan.join is not None and sum(after) >= settings.min_merge_reduction * sum(groups)
    work = {i: reduce_work(r, a, g, merged)
            for i, (r, a, g) in enumerate(zip(rows, after, groups)) if r > 0}
    return Measures(vanilla, local, work)


def reduce_work(read: int, after: int, groups: int, merged: bool) -> float:
    """A reduce task's work with skewagg's local aggregate over its work without, counted in rows
    an operator reads: without, its ``read`` rows; with, the ``after`` rows the local aggregate
    would leave. Where those are merged after a join's shuffle, vanilla's join and aggregate read
    ``read`` rows each, skewagg's merge reads ``after`` and its join and final aggregate read the
    partition's ``groups`` each."""
    if merged:
        return min(1.0, (after + 2 * groups) / (2 * read))
    return after / read


