"""Whether a window split pays, restated for an event log: the rules' ``WindowSplitCost`` over
the pieces and the sample ``WindowSplitPlan.pieces`` would make, from the sizes of the window
stage's tasks and the map tasks that wrote them (a log has no size per map output: each skewed
partition is taken as written evenly by every map task). The shared cases of
tests/data/skew_test_vectors.json (``windowSplitCostCases``) tie this arithmetic to the rules'."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Sequence

from skewagg.advisor.skew_rule import SkewFound, SkewSettings, split_size
from skewagg.rendering import format_bytes

# What a byte costs each of the split's stages against Spark's sort and window (the rules'
# WindowSplitCost.SampleWeight, RouteWeight and EvaluateWeight; the shared cases check them).
SAMPLE_WEIGHT = 0.75
ROUTE_WEIGHT = 1.6
EVALUATE_WEIGHT = 1.7

# The map outputs a partition is taken to have at most (a log that does not name the writing
# stage counts its map tasks as unknown: many).
MAX_MAP_OUTPUTS = 100_000

# Spark's ShufflePartitionsUtil factors for cutting map outputs into pieces.
_MERGED_PARTITION_FACTOR = 1.2
_SMALL_PARTITION_FACTOR = 0.2


@dataclass(frozen=True)
class WindowSplitCost:
    """Spark's window stage against the split's three stages, each the longer of its longest
    task and its even share on ``slots`` slots, in bytes."""

    slots: int
    spark_stage: float
    sample: float
    route: float
    evaluate: float

    @property
    def split(self) -> float:
        """The split's three stages, weighed."""
        return (SAMPLE_WEIGHT * self.sample + ROUTE_WEIGHT * self.route
                + EVALUATE_WEIGHT * self.evaluate)

    @property
    def pays(self) -> bool:
        return self.split < self.spark_stage

    def describe(self) -> str:
        """The rules' text: "about 0.06x of Spark's stage of 58.2 MiB on 64 slots: ..."."""
        return (f"about {self.split / self.spark_stage:.2f}x of Spark's stage of "
                f"{format_bytes(int(self.spark_stage))} on {self.slots} slots: its sample's "
                f"longest read {format_bytes(int(self.sample))}, routing "
                f"{format_bytes(int(self.route))}, splits {format_bytes(int(self.evaluate))}, "
                f"weighed {SAMPLE_WEIGHT}, {ROUTE_WEIGHT} and {EVALUATE_WEIGHT} a byte against "
                "Spark's window")


def piece_starts(sizes: Sequence[int], target: int) -> List[int]:
    """The first map output of each piece (Spark's ``splitSizeListByTargetSize`` with its small
    partition factor): map outputs added up to ``target``, a small piece merged into the one
    before it."""
    starts = [0]
    current, last = 0, -1

    def close() -> None:
        nonlocal last
        if last > -1 and (current + last < target * _MERGED_PARTITION_FACTOR
                          or current < target * _SMALL_PARTITION_FACTOR
                          or last < target * _SMALL_PARTITION_FACTOR):
            starts.pop()
            last += current
        else:
            last = current

    for i, size in enumerate(sizes):
        if i > 0 and current + size > target:
            close()
            starts.append(i)
            current = size
        else:
            current += size
    close()
    return starts


def pieces_of(map_sizes: Sequence[int], target: int) -> Optional[List[int]]:
    """The bytes of each piece a partition's map outputs are read in, or None: read whole."""
    if any(s < 0 for s in map_sizes):
        return None
    starts = piece_starts(map_sizes, target)
    if len(starts) <= 1:
        return None
    ends = starts[1:] + [len(map_sizes)]
    return [sum(map_sizes[a:b]) for a, b in zip(starts, ends)]


def systematic(sizes: Sequence[int], n: int) -> List[int]:
    """The items n points evenly spaced over the sizes' total hit (the rules'
    ``SampledMapOutputs.systematic``): every item when n is at least their number."""
    if n >= len(sizes):
        return list(range(len(sizes)))
    step = float(sum(sizes)) / n
    point, start, chosen = step / 2, 0.0, []
    for i, size in enumerate(sizes):
        end = start + size
        if point < end:
            chosen.append(i)
        while point < end:
            point += step
        start = end
    return chosen


def window_split_cost(sizes: Sequence[int], found: SkewFound, s: SkewSettings,
                      map_tasks: int, global_window: bool) -> WindowSplitCost:
    """The cost of splitting ``found``'s partitions (the per-slot share's test) of a window's
    shuffle of ``sizes`` (one task a partition), each written evenly by ``map_tasks`` map tasks
    (at most :data:`MAX_MAP_OUTPUTS`), as ``WindowSplitPlan.pieces`` cuts and samples them."""
    maps = max(1, min(map_tasks, MAX_MAP_OUTPUTS))
    skewed = {i for i, _ in found.skewed}
    piece_size = split_size(sizes, found, s)
    by_map = {i: [sizes[i] // maps] * maps for i in skewed}
    pieces: List[int] = []
    for i in sorted(skewed):
        pieces += pieces_of(by_map[i], piece_size) or [sizes[i]]
    skewed_bytes = sum(sizes[i] for i in skewed)
    slices = (max(len(pieces), math.ceil(skewed_bytes / piece_size)) if global_window
              else len(pieces))
    outputs = [m for i in sorted(skewed) for m in by_map[i] if m > 0]
    n = max(len(skewed), min(slices, s.window_max_splits),
            math.ceil(len(outputs) * s.window_sample_fraction))
    sampled = [outputs[j] for j in systematic(outputs, n)]
    slots = max(found.slots, 1)

    def stage(read: Sequence[int], at_least: float = 0.0) -> float:
        return max(at_least, max(max(read, default=0), sum(read) // slots))

    largest = max((sizes[i] for i in skewed), default=0)
    share = float(sum(sizes)) / slots
    ordinary = [size for i, size in enumerate(sizes) if i not in skewed]
    evaluate_at_least = max(share, max(piece_size, largest // max(s.window_max_splits, 1)))
    return WindowSplitCost(slots, max(largest, share), stage(sampled), stage(pieces),
                           stage(ordinary, evaluate_at_least))
