"""What skewagg would do with a skewed stage of an event log: the rules' decisions restated on
what a log shows (:func:`decide`), with the texts the rules record ("would rewrite: ...",
"left alone: ...", "not skewed: ...")."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from skewagg.advisor.skew_rule import (
    SINGLE_KEY_MIN_ROWS_KEY,
    SKEW_FLOOR_KEY,
    SPLIT_SIZE_KEY,
    TASK_SLOTS_KEY,
    WINDOW_MIN_ROWS_KEY,
    RowsMeasure,
    SkewFound,
    SkewSettings,
    find_skewed,
    split_size,
)
from skewagg.advisor.stage_plans import (
    SPLIT_HOLISTIC,
    StagePlan,
    aggregate_functions,
    function_name,
    reads_one_side,
    window_refusal,
)
from skewagg.advisor.window_cost import window_split_cost
from skewagg.rendering import format_bytes


def _fmt(size: float, in_rows: bool) -> str:
    """A size as a test measured it: "61,234 rows", or "4.2 MiB"."""
    return f"{int(size):,} rows" if in_rows else format_bytes(size)


def _not_skewed(where: str, sizes: Sequence[int], found: SkewFound, s: SkewSettings,
                at_floor: Optional[Sequence[int]] = None) -> str:
    """The rules' "not skewed" text (SkewAggDecision.NotSkewed); ``at_floor``: what the floor is
    compared with where ``sizes`` are rows (their size in memory)."""
    largest = max(range(len(sizes)), key=lambda i: sizes[i])
    ratio = f"{sizes[largest] / found.median:.1f}x" if found.median else "n/a x"
    if (at_floor if at_floor is not None else sizes)[largest] <= s.floor:
        why = f"below the {format_bytes(s.floor)} floor ({SKEW_FLOOR_KEY})"
    else:
        why = (f"not more than {s.factor}x the per-slot share "
               f"{_fmt(found.slot_share, found.in_rows)} on {found.slots} task slots "
               f"({TASK_SLOTS_KEY})")
    return (f"not skewed: in {where}, the largest partition ({largest}) is "
            f"{_fmt(sizes[largest], found.in_rows)}, {ratio} the median "
            f"{_fmt(found.median, found.in_rows)}: {why}.")


def _skew_text(sizes: Sequence[int], found: SkewFound, verb: str = "read") -> str:
    pid, size = max(found.skewed, key=lambda x: x[1])
    if found.whole_stage:  # (a window's stage of one task)
        share = (f"{size / found.slot_share:.0f}x the per-slot share on {found.slots} slots"
                 if found.slot_share else f"on {found.slots} slots")
        if len(sizes) == 1:
            return (f"no PARTITION BY: Spark runs the window in one task "
                    f"({_fmt(size, found.in_rows)}, {share})")
        more = len(found.skewed) - 1
        return (f"partition {pid} {verb} {_fmt(size, found.in_rows)}, {share}"
                + (f" (and {more} more skewed)" if more else ""))
    ratio = f"{size / found.median:.0f}x" if found.median else "many times"
    more = len(found.skewed) - 1
    return (f"partition {pid} {verb} {_fmt(size, found.in_rows)}, {ratio} the median "
            f"{_fmt(found.median, found.in_rows)}" + (f" (and {more} more skewed)" if more else ""))


@dataclass
class Decision:
    rewrite: Optional[str]
    text: str
    pieces: Dict[int, int] = field(default_factory=dict)  # split task -> pieces
    local: bool = False  # aggregated before the shuffle
    # With ``local``: task -> the rows it would read after the local aggregate over the rows it
    # read (an estimate); empty where the log does not count them: the hot tasks (``hot``) then
    # take the stage's median time.
    scale: Dict[int, float] = field(default_factory=dict)
    hot: List[int] = field(default_factory=list)
    # The stages of as many tasks as pieces a split adds before the others, where each split
    # task then leaves one task merging its pieces' results: 1, the pieces (a bucketed scan's
    # split); 2, the pieces and the regrouping of their rows on all the grouping keys (a
    # DISTINCT's split); 0, the pieces run in place of the split task.
    stages_apart: int = 0


# The fewest states a skewed partition's merge reads (map tasks that wrote to it) from which
# SplitMergeOfPartialStates merges them in two levels (its MinStates).
MIN_STATES = 16
# Functions whose merged state concatenates its inputs' (the rule's Collect but sets and top-K):
# their final merge reads every value however the states were merged before.
CONCATENATING = ("collect_list", "array_agg", "listagg", "string_agg")


def _merge_of_states(sizes: Sequence[int], rows: Sequence[int], s: SkewSettings, slots: int,
                     map_tasks: int, functions: Sequence[str]) -> Optional[Decision]:
    """The rules' SplitMergeOfPartialStates on the final half of Spark's aggregate, whose stage
    read ``sizes`` bytes and ``rows`` partial states per task: where the states average at least
    ``spark.skewagg.partialStates.split.minStateSize`` and a partition is above the per-slot
    share, its states are read in pieces of about sqrt(n) of n states (at least the per-slot
    share), each merged in its own task, then once more per key. A log has no sizes per map
    output: every map task is taken as writing a state to each skewed partition. None where the
    states are light or no partition stands above the share (Spark's plan); left alone where a
    function's merge concatenates its states (``functions``: the aggregate's, by name)."""
    states = sum(rows)
    per_state = sum(sizes) // states if states else 0
    found = find_skewed(sizes, s, slots)
    if per_state < s.min_state_size or not found.skewed:
        return None
    pid, size = max(found.skewed, key=lambda x: x[1])
    more = f" (and {len(found.skewed) - 1} more)" if len(found.skewed) > 1 else ""
    holds = (f"partition {pid} holds {format_bytes(size)} of the states of {map_tasks:,} map "
             f"tasks ({format_bytes(per_state)} a state), {size / max(found.slot_share, 1):.0f}x "
             f"the per-slot share {format_bytes(found.slot_share)} on {found.slots} task slots"
             f"{more}")
    joined = [f for f in functions if function_name(f) in CONCATENATING]
    if joined:
        return Decision(None, f"left alone: the final merge reads heavy partial states ({holds}), "
                         f"but {function_name(joined[0])}'s merge keeps every value its states "
                         "hold: merged in pieces first, the final merge still reads them all, "
                         "and the pieces' stage is added work.")
    if map_tasks < MIN_STATES:
        return Decision(None, f"left alone: the final merge reads heavy partial states ({holds}), "
                         f"but at most {map_tasks} map tasks wrote to a skewed partition: a merge "
                         f"in two levels pays from {MIN_STATES}.")
    target = max(split_size(sizes, found, s), found.slot_share,
                 max(sizes[i] // math.ceil(math.sqrt(map_tasks)) for i, _ in found.skewed))
    pieces = {i: max(1, math.ceil(sizes[i] / target)) for i, _ in found.skewed}
    rewrite = "heavy partial states merged in two levels (SplitMergeOfPartialStates)"
    return Decision(rewrite, f"would rewrite: {rewrite}: the final merge reads one partial state "
                     f"per map task and key, {holds}; read in up to {max(pieces.values())} pieces "
                     f"of about {format_bytes(target)}, each merging its states in its own task, "
                     "then one state per piece and key merged once more.", pieces,
                     stages_apart=1)


@dataclass
class Measures:
    """The shuffle a split rule would test, as it would test it: ``vanilla`` (the shuffle the log
    measured: in rows where the first step groups beyond its keys, else in bytes), ``local`` (the
    same shuffle after skewagg's local aggregate or deduplication before it, estimated; None
    where the log does not count the first step's groups), and ``scale``, each task's work with
    that local aggregate over its work without (:func:`reduce_work`)."""

    vanilla: RowsMeasure
    local: Optional[RowsMeasure] = None
    scale: Dict[int, float] = field(default_factory=dict)


def decide(plan: StagePlan, sizes: List[int], rows: List[int], found: SkewFound,
            bare: SkewFound, s: SkewSettings, map_tasks: int, where: str,
            measures: Measures) -> Decision:
    """What skewagg would do with a stage whose sizes pass the test without the floor
    (``bare``); ``found``: the test with the floor; ``measures``: the split rules' test."""
    skew = _skew_text(sizes, bare)

    def pieces_of(m: RowsMeasure, cap: int) -> Tuple[int, Dict[int, int]]:
        piece = m.split_size(s)
        return piece, {i: min(cap, math.ceil(m.bytes[i] / piece)) for i, _ in m.found.skewed}

    def split(rewrite: str, cap: int, stages_apart: int = 0) -> Decision:
        m = measures.vanilla
        if not m.found.skewed:
            return Decision(None, "left alone: " + _not_skewed(where, m.sizes, m.found, s,
                                                                 m.at_floor))
        tested = _skew_text(m.sizes, m.found) if m.in_rows else skew
        piece, pieces = pieces_of(m, cap)
        if max(pieces.values()) < 2:
            return Decision(None, f"left alone: {tested}, but pieces of {format_bytes(piece)} "
                             f"({SPLIT_SIZE_KEY}) leave it whole. Lower {SPLIT_SIZE_KEY} to "
                             "split it.")
        return Decision(rewrite, f"would rewrite: {rewrite}: {tested}, read in up to "
                         f"{max(pieces.values())} pieces of about {format_bytes(piece)}.", pieces,
                         stages_apart=stages_apart)

    def local(rewrite: str, dedup: bool = False) -> Decision:
        reach = ("one row per value and upstream task" if dedup else "one row per upstream task")
        return Decision(rewrite, f"would rewrite: {rewrite} (planned for every such aggregate, "
                         f"whatever the sizes): {skew}; the hot key's rows are merged where "
                         f"they are read, and reach this stage as {reach}.",
                         local=True, scale=measures.scale, hot=[i for i, _ in bare.skewed])

    def local_then_split(first: str, first_rule: str, then: str, then_rule: str,
                         cap: int) -> Decision:
        """A deduplication before the shuffle (planned whatever the sizes), then the split of
        what it leaves where that is skewed in rows."""
        done = local(f"{first} ({first_rule})", dedup=True)
        m = measures.local or measures.vanilla
        after = "after the deduplication (estimated)" if measures.local else "as read"
        if not m.found.skewed:
            done.text += (f" No split: the rows {after} are "
                          + _not_skewed(where, m.sizes, m.found, s, m.at_floor))
            return done
        piece, pieces = pieces_of(m, cap)
        tested = _skew_text(m.sizes, m.found, "would hold" if measures.local else "read")
        if max(pieces.values()) < 2:
            done.text += (f" No split: {after}, {tested}, but pieces of {format_bytes(piece)} "
                          f"({SPLIT_SIZE_KEY}) leave it whole.")
            return done
        rewrite = f"{first}, then {then} ({first_rule}, {then_rule})"
        return Decision(rewrite, f"would rewrite: {rewrite}: {skew}; {after}, {tested}, read "
                         f"in up to {max(pieces.values())} pieces of about {format_bytes(piece)}.",
                         pieces, local=True, scale=measures.scale,
                         hot=[i for i, _ in bare.skewed], stages_apart=2)

    def hot_key(rewrite: str, min_rows: int, min_key: str, max_splits: int,
                needs_floor: bool) -> Decision:
        if needs_floor and not found.skewed:
            return Decision(None, "left alone: " + _not_skewed(where, sizes, found, s))
        hot = max(bare.skewed, key=lambda x: x[1])[0]
        if rows[hot] < min_rows:
            return Decision(None, f"left alone: no hot key split: {skew}, about "
                             f"{rows[hot]:,} rows, under {min_key}={min_rows} (the hot key "
                             "holds at most that many).")
        if bare.whole_stage:  # (a window: pieces of the split size, as its run cuts)
            piece = max(1, split_size(sizes, bare, s))
            pieces = {i: max(2, min(max_splits, math.ceil(sizes[i] / piece)))
                      for i, _ in bare.skewed}
        else:
            per_task = max(1.0, statistics.median(rows) if rows else 1.0)
            pieces = {i: max(2, min(max_splits, math.ceil(rows[i] / per_task)))
                      for i, _ in bare.skewed}
        return Decision(rewrite, f"would rewrite: {rewrite}: {skew}; the hot key split into "
                         f"up to {max(pieces.values())} tasks.", pieces)

    kind = plan.kind
    if kind == "window":
        why = window_refusal(plan.top.desc if plan.top else "")
        if why:
            return Decision(None, f"left alone: Spark's window: {why}; {skew}.")
        decided = hot_key("hot keys of the window split by ranges of its order "
                          "(SplitSkewedWindow)", s.window_min_rows, WINDOW_MIN_ROWS_KEY,
                          s.window_max_splits, True)
        if decided.rewrite is None:
            return decided
        by_share = find_skewed(sizes, s, found.slots)  # (the split's run tests so)
        if not by_share.skewed:
            return decided
        cost = window_split_cost(sizes, by_share, s, map_tasks, global_window=len(sizes) == 1)
        if not cost.pays:
            return Decision(None, f"left alone: {skew}, left to Spark's window: the split would "
                             f"take {cost.describe()} (its map tasks taken as writing each "
                             "partition evenly).")
        decided.text = decided.text[:-1] + f"; the split takes {cost.describe()}."
        return decided
    if kind == "aggregate-join":
        assert plan.top is not None and plan.join is not None
        join_type = plan.join.desc.rsplit(",", 1)[-1].strip().split()[0] if "," in \
            plan.join.desc else ""
        functions = aggregate_functions(plan.top.desc)
        one_side = join_type != "FullOuter" and reads_one_side(plan.top, plan.join)
        in_rows = ", counted in rows" if measures.vanilla.in_rows else ""
        if plan.distinct and one_side and all("distinct" in f for f in functions):
            # DISTINCT-only: that side deduplicated before the join, its (k, i) rows merged
            # after; the join split where what the deduplication leaves is skewed in rows.
            return local_then_split(
                "deduplication of the aggregated side before the join", "LocalAggregateBeforeJoin",
                "the skew split of the join below the aggregate, counted in rows, the skewed "
                "partitions' pieces deduplicated on all the grouping keys apart",
                "SplitSkewedJoinBelowAggregate", map_tasks)
        if not plan.distinct and one_side:
            return local("flushing partial aggregate before the join (LocalAggregateBeforeJoin)")
        return split(f"skew split of the join below the aggregate{in_rows} "
                     "(SplitSkewedJoinBelowAggregate)", map_tasks)
    if kind == "holistic-join":
        return split("skew split of the join below the aggregate "
                     "(SplitSkewedJoinBelowAggregate)", map_tasks)
    if kind == "aggregate-repartition":
        if plan.distinct and not plan.expands and plan.groups_beyond_keys:
            # The flushing aggregate runs the DISTINCT's first step before the user's shuffle;
            # the merge after it is split where what it leaves is skewed in rows.
            return local_then_split(
                "flushing partial aggregate before the user's repartition, deduplicating the "
                "DISTINCT's (keys, value) rows", "PartialAggregateBeforeRepartition",
                "the skewed repartition read in splits, counted in rows, each split merging its "
                "own rows, its pieces exchanged on all the grouping keys and regrouped on the "
                "keys apart (the other partitions aggregating in place)",
                "SplitSkewedShuffleBelowAggregate", map_tasks)
        return local("flushing partial aggregate before the user's repartition "
                     "(PartialAggregateBeforeRepartition)")
    if kind == "holistic-repartition":
        return split("skewed repartition read in splits (SplitSkewedShuffleBelowAggregate)",
                     map_tasks)
    if kind.endswith("-bucketed"):
        return split("skewed buckets read unbucketed (SplitSkewedBucketsBelowAggregate)",
                     1 << 30, stages_apart=1)
    if kind == "holistic":
        names = {function_name(f) for f in aggregate_functions(plan.top.desc if plan.top else "")}
        if names - SPLIT_HOLISTIC:
            return Decision(None, "left alone: would rewrite to one shuffle of the raw rows "
                             "sorted by (keys, value) (PlanHolisticAggregatesSortBased), but "
                             f"{', '.join(sorted(names - SPLIT_HOLISTIC))} is not split by "
                             f"value: the hot key stays in one task; {skew}.")
        return hot_key("one shuffle of the raw rows sorted by (keys, value), the hot key's exact "
                       "percentiles split by value across tasks (PlanHolisticAggregatesSortBased"
                       ", HotKeySplitAggregate)", s.single_key_min_rows,
                       SINGLE_KEY_MIN_ROWS_KEY, 256, False)
    if kind == "aggregate":
        heavy = _merge_of_states(sizes, rows, s, found.slots, map_tasks,
                                 aggregate_functions(plan.top.desc if plan.top else ""))
        if heavy is not None:
            return heavy
        return Decision(None, "left alone: Spark's own plan already aggregates each task's rows "
                         "before the shuffle, so a hot key's rows are combined per task and "
                         f"there is nothing to split; {skew}.")
    if kind == "join":
        return Decision(None, "left alone: no aggregate or window in this stage: skewagg "
                         "rewrites aggregates and windows over a hot key (a join alone: Spark's "
                         f"skew join, spark.sql.adaptive.skewJoin.enabled); {skew}.")
    return Decision(None, f"left alone: no aggregate, join or window in this stage; {skew}.")


