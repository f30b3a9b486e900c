"""skewagg's skew test in Python, for code that runs without a JVM (the event-log advisor).

The rules' test is ``SkewedPartitions`` in the extension: a partition is skewed when it is larger
than ``spark.skewagg.skew.factor`` times the per-slot share (the total over
``spark.skewagg.skew.taskSlots``, else the application's task slots), however large the others
are, and than the floor ``spark.skewagg.skew.minPartitionSize``; the median (the upper middle
partition) describes them. A skewed partition is split into pieces of the average partition that
is not skewed, at least ``spark.skewagg.skew.minSplitSize`` (:func:`split_size`), and an
aggregate's split into pieces of at least a quarter of the per-slot share (:func:`piece_size`).

Below an aggregate that groups by more than the shuffle's keys (a DISTINCT's first step), the rules
measure a shuffle in rows (``GroupsBeyondShuffleKeys.measure``, :func:`measure_rows` here): each
partition's share of the shuffle's records in proportion to its bytes, skewed against the
per-slot share without the floor, and above the floor by those rows' size in memory; the
smallest piece of a split is weighed in memory too and cut in the shuffle's bytes.

Two files keep this code and the rules' from drifting apart: the settings' defaults come from
``skew_settings.json``, which ``make docs`` writes from the extension's ``SkewAggConf`` (the Scala
suite ``ConfigDocsSuite`` fails when it is stale), and ``tests/data/skew_test_vectors.json`` holds
cases that the Scala suite ``SkewTestVectorsSuite`` checks against ``SkewedPartitions`` and
``tests/test_skew_vectors.py`` against :func:`find_skewed`.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from skewagg.errors import SkewAggError

SKEW_FACTOR_KEY = "spark.skewagg.skew.factor"
SKEW_FLOOR_KEY = "spark.skewagg.skew.minPartitionSize"
SPLIT_SIZE_KEY = "spark.skewagg.skew.minSplitSize"
TASK_SLOTS_KEY = "spark.skewagg.skew.taskSlots"
SINGLE_KEY_MIN_ROWS_KEY = "spark.skewagg.singleKey.split.minKeyRows"
SINGLE_KEY_MAX_SPLITS_KEY = "spark.skewagg.singleKey.split.maxSplits"
WINDOW_MIN_ROWS_KEY = "spark.skewagg.window.split.minKeyRows"
WINDOW_MAX_SPLITS_KEY = "spark.skewagg.window.split.maxSplits"
LOCAL_CAPACITY_KEY = "spark.skewagg.localAggregate.capacity"
MIN_MERGE_REDUCTION_KEY = "spark.skewagg.localAggregate.minMergeReduction"
WINDOW_SAMPLE_FRACTION_KEY = "spark.skewagg.window.split.sampleFraction"
MIN_STATE_SIZE_KEY = "spark.skewagg.partialStates.split.minStateSize"

SETTINGS_FILE = Path(__file__).resolve().parent / "skew_settings.json"

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "g": 1 << 30, "gb": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "p": 1 << 50, "pb": 1 << 50}


def parse_bytes(text: str) -> int:
    """Bytes in a Spark size string such as ``16MB``, ``1m`` or ``1048576`` (binary units)."""
    match = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(text))
    if not match or match.group(2).lower() not in _UNITS:
        raise SkewAggError(f"not a size: {text!r} (write e.g. 16MB, 512k or 1048576)")
    return int(match.group(1)) * _UNITS[match.group(2).lower()]


def default_settings() -> Dict[str, str]:
    """The skew test's settings and their defaults, as ``SkewAggConf`` declares them."""
    loaded = json.loads(SETTINGS_FILE.read_text(encoding="utf-8"))
    return {k: str(v) for k, v in loaded.items() if not k.startswith("_")}


# The settings' defaults, for code without a JVM (and for sessions without skewagg): generated
# from the JVM's config object (skew_settings.json; tests also tie them to it).
DEFAULT_SKEW_FACTOR = default_settings()[SKEW_FACTOR_KEY]
DEFAULT_SKEW_FLOOR = default_settings()[SKEW_FLOOR_KEY]
DEFAULT_SPLIT_SIZE = default_settings()[SPLIT_SIZE_KEY]
DEFAULT_TASK_SLOTS = default_settings()[TASK_SLOTS_KEY]


@dataclass(frozen=True)
class SkewSettings:
    """The skew test's settings: ``factor``, ``floor`` and ``min_split`` in bytes, ``task_slots``
    (0: the application's); the hot-key splits' least rows of a key and most splits (percentiles:
    ``single_key_*``, windows: ``window_*``, with the share of map outputs a window's sample
    reads); the keys a flushing local aggregate's map holds (``local_capacity``); the average
    partial state from which merging states is an aggregate's work (``min_state_size``)."""

    factor: float
    floor: int
    min_split: int
    task_slots: int
    single_key_min_rows: int = 1
    single_key_max_splits: int = 2
    window_min_rows: int = 1
    window_max_splits: int = 2
    local_capacity: int = 16384
    min_merge_reduction: float = 3.0
    window_sample_fraction: float = 0.1
    min_state_size: int = 1024

    @staticmethod
    def of(conf: Optional[Mapping[str, str]] = None) -> "SkewSettings":
        """From ``conf`` (``spark.skewagg.skew.*`` keys), each missing key at its default."""
        values = default_settings()
        values.update({k: str(v) for k, v in (conf or {}).items() if k in values})
        integers = {}
        for key in (TASK_SLOTS_KEY, SINGLE_KEY_MIN_ROWS_KEY, SINGLE_KEY_MAX_SPLITS_KEY,
                    WINDOW_MIN_ROWS_KEY, WINDOW_MAX_SPLITS_KEY, LOCAL_CAPACITY_KEY):
            try:
                integers[key] = int(values[key])
            except ValueError:
                raise SkewAggError(f"{key}={values[key]!r} is not an integer") from None
            if integers[key] < 0:
                raise SkewAggError(f"{key}={values[key]} must not be negative")
        factor, min_merge = (_at_least_one(values, k)
                             for k in (SKEW_FACTOR_KEY, MIN_MERGE_REDUCTION_KEY))
        return SkewSettings(factor, parse_bytes(values[SKEW_FLOOR_KEY]),
                            parse_bytes(values[SPLIT_SIZE_KEY]), integers[TASK_SLOTS_KEY],
                            integers[SINGLE_KEY_MIN_ROWS_KEY], integers[SINGLE_KEY_MAX_SPLITS_KEY],
                            integers[WINDOW_MIN_ROWS_KEY], integers[WINDOW_MAX_SPLITS_KEY],
                            integers[LOCAL_CAPACITY_KEY], min_merge,
                            _fraction(values, WINDOW_SAMPLE_FRACTION_KEY),
                            parse_bytes(values[MIN_STATE_SIZE_KEY]))


def _fraction(values: Mapping[str, str], key: str) -> float:
    """A setting in (0, 1], as ``SkewAggConf``'s ``fraction`` checks it."""
    try:
        value = float(values[key])
    except ValueError:
        raise SkewAggError(f"{key}={values[key]!r} is not a number") from None
    if not 0 < value <= 1:
        raise SkewAggError(f"{key}={values[key]} must be above 0 and at most 1")
    return value


def _at_least_one(values: Mapping[str, str], key: str) -> float:
    """The setting ``key`` of ``values`` as a number of at least 1.0."""
    try:
        number = float(values[key])
    except ValueError:
        number = 0.0
    if not number >= 1.0:
        raise SkewAggError(f"{key}={values[key]!r} must be a number of at least 1.0")
    return number


@dataclass(frozen=True)
class SkewFound:
    """What the skew test found: ``skewed`` (index, size) pairs in index order, as the rules'
    ``SkewedPartitions``."""

    median: int
    threshold: int
    skewed: List[Tuple[int, int]]
    total: int
    slots: int
    in_rows: bool = False  # sizes are rows (find_by_rows), not bytes
    # A window's stage of one task (no PARTITION BY: its one key is the whole table): said so.
    whole_stage: bool = False

    @property
    def slot_share(self) -> int:
        return self.total // max(self.slots, 1)


def find_skewed(sizes: Sequence[int], settings: SkewSettings, slots: int,
                floor: Optional[int] = None) -> SkewFound:
    """The partitions of ``sizes`` that are skewed on ``slots`` task slots, as the rules'
    ``SkewedPartitions.find``: above the floor (``floor``: another than the settings', e.g. 0
    for sizes that are not bytes) and the skew factor times the even share of the whole per task
    slot, however large the others are. One partition holding the whole stage (a window without
    PARTITION BY), or a few keys in about as many partitions on many more slots, is skewed where
    a test against the median would find it typical; the median only describes."""
    if not sizes:
        return SkewFound(0, 0, [], 0, slots)
    median = sorted(sizes)[len(sizes) // 2]
    total = sum(sizes)
    threshold = max(settings.floor if floor is None else floor,
                    int(total // max(slots, 1) * settings.factor))
    return SkewFound(median, threshold, [(i, s) for i, s in enumerate(sizes) if s > threshold],
                     total, slots)


def split_size(sizes: Sequence[int], found: SkewFound, settings: SkewSettings,
               min_split: Optional[int] = None) -> int:
    """The size of the pieces a skewed partition is read in: the average partition that is not
    skewed, at least ``spark.skewagg.skew.minSplitSize`` (``min_split``: another smallest piece,
    e.g. that size in memory in a shuffle's bytes, :attr:`RowsMeasure.byte_min_split`)."""
    skewed = {i for i, _ in found.skewed}
    normal = [s for i, s in enumerate(sizes) if i not in skewed]
    smallest = settings.min_split if min_split is None else min_split
    return max(smallest, sum(normal) // len(normal) if normal else 0)


# The pieces of a split per task slot at most (the rules' SkewedPartitions.PiecesPerSlot).
PIECES_PER_SLOT = 4


def piece_size(sizes: Sequence[int], found: SkewFound, settings: SkewSettings,
               min_split: Optional[int] = None) -> int:
    """The pieces an aggregate's split reads (the rules' ``SkewedPartitions.pieceSize``):
    :func:`split_size`, at least 1/``PIECES_PER_SLOT`` of the per-slot share of ``sizes`` (in
    their own measure), so that the pieces are at most about that many per slot however many
    partitions are skewed."""
    smallest = sum(sizes) // max(found.slots, 1) // PIECES_PER_SLOT
    return max(split_size(sizes, found, settings, min_split), smallest)


def find_by_rows(rows: Sequence[int], settings: SkewSettings, slots: int,
                 at_floor: Sequence[int]) -> SkewFound:
    """Skew measured in ``rows`` (the rules' ``SkewedPartitions.findByRows``): against the
    per-slot share without the floor, then only partitions whose ``at_floor`` (their rows
    in bytes, e.g. in memory) is above ``spark.skewagg.skew.minPartitionSize``."""
    found = find_skewed(rows, settings, slots, floor=0)
    return SkewFound(found.median, found.threshold,
                     [(i, r) for i, r in found.skewed if at_floor[i] > settings.floor],
                     found.total, found.slots, in_rows=True)


def _round(x: float) -> int:
    """Scala's ``math.round`` of a double: half up."""
    return int(math.floor(x + 0.5))


@dataclass(frozen=True)
class RowsMeasure:
    """A shuffle's partitions as the rules' ``GroupsBeyondShuffleKeys.Measured``: ``sizes`` (what
    is tested and reported: rows, or bytes where the records are not known), ``at_floor`` (what
    the floor is compared with: the rows in memory, or the bytes), and the floor and the smallest
    piece of a split in the shuffle's bytes."""

    bytes: List[int]
    sizes: List[int]
    at_floor: List[int]
    found: SkewFound
    byte_floor: int
    byte_min_split: int

    @property
    def in_rows(self) -> bool:
        return self.found.in_rows

    def split_size(self, settings: SkewSettings) -> int:
        """The bytes of the pieces a split reads a skewed partition in (the rules'
        ``SkewedPartitions.pieceSize(bytes, skew, byteMinSplit)``)."""
        return piece_size(self.bytes, self.found, settings, self.byte_min_split)


def measure_rows(sizes: Sequence[int], records: int, data_size: int, settings: SkewSettings,
                 slots: int) -> RowsMeasure:
    """Partitions of ``sizes`` bytes of a shuffle that wrote ``records`` records of ``data_size``
    bytes in memory, measured as the rules' ``GroupsBeyondShuffleKeys.measure``: in rows, each
    partition's share of the records in proportion to its bytes, at the floor by those rows'
    size in memory; in bytes (:func:`find_skewed`) when a number is 0 (not counted)."""
    bytes_ = [int(b) for b in sizes]
    total = sum(bytes_)
    if records <= 0 or total <= 0 or data_size <= 0:
        return RowsMeasure(bytes_, bytes_, bytes_, find_skewed(bytes_, settings, slots),
                           settings.floor, settings.min_split)
    # The arithmetic of the rules' doubles: (b * records) / total, rounded half up.
    rows = [_round(float(b) * records / total) for b in bytes_]
    in_memory = [_round(float(r) * data_size / records) for r in rows]

    def in_shuffle_bytes(size: int) -> int:
        return max(1, _round(float(size) * total / data_size))

    return RowsMeasure(bytes_, rows, in_memory,
                       find_by_rows(rows, settings, slots, in_memory),
                       in_shuffle_bytes(settings.floor), in_shuffle_bytes(settings.min_split))
