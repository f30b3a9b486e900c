"""skewagg's skew test in Python, for code that runs without a JVM (the event-log advisor).

The rules' test is ``SkewedPartitions`` in the extension: a partition is skewed when it is larger
than ``spark.skewagg.skew.factor`` times the median partition (the upper middle one), than that
factor times the per-slot share (the total over ``spark.skewagg.skew.taskSlots``, else the
application's task slots), and than the floor ``spark.skewagg.skew.minPartitionSize``. A skewed
partition is split into pieces of the average partition that is not skewed, at least
``spark.skewagg.skew.minSplitSize``.

Two files keep this code and the rules' from drifting apart: the settings' defaults come from
``skew_settings.json``, which ``make docs`` writes from the extension's ``SkewAggConf`` (the Scala
suite ``ConfigDocsSuite`` fails when it is stale), and ``tests/data/skew_test_vectors.json`` holds
cases that the Scala suite ``SkewTestVectorsSuite`` checks against ``SkewedPartitions`` and
``tests/test_skew_vectors.py`` against :func:`find_skewed`.
"""

from __future__ import annotations

import json
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


@dataclass(frozen=True)
class SkewSettings:
    """The skew test's settings: ``factor``, ``floor`` and ``min_split`` in bytes, ``task_slots``
    (0: the application's); the hot-key splits' least rows of a key and most splits (percentiles:
    ``single_key_*``, windows: ``window_*``)."""

    factor: float
    floor: int
    min_split: int
    task_slots: int
    single_key_min_rows: int = 1
    single_key_max_splits: int = 2
    window_min_rows: int = 1
    window_max_splits: int = 2

    @staticmethod
    def of(conf: Optional[Mapping[str, str]] = None) -> "SkewSettings":
        """From ``conf`` (``spark.skewagg.skew.*`` keys), each missing key at its default."""
        values = default_settings()
        values.update({k: str(v) for k, v in (conf or {}).items() if k in values})
        integers = {}
        for key in (TASK_SLOTS_KEY, SINGLE_KEY_MIN_ROWS_KEY, SINGLE_KEY_MAX_SPLITS_KEY,
                    WINDOW_MIN_ROWS_KEY, WINDOW_MAX_SPLITS_KEY):
            try:
                integers[key] = int(values[key])
            except ValueError:
                raise SkewAggError(f"{key}={values[key]!r} is not an integer") from None
            if integers[key] < 0:
                raise SkewAggError(f"{key}={values[key]} must not be negative")
        try:
            factor = float(values[SKEW_FACTOR_KEY])
        except ValueError:
            factor = 0.0
        if not factor >= 1.0:
            raise SkewAggError(f"{SKEW_FACTOR_KEY}={values[SKEW_FACTOR_KEY]!r} must be a number "
                               f"of at least 1.0")
        return SkewSettings(factor, parse_bytes(values[SKEW_FLOOR_KEY]),
                            parse_bytes(values[SPLIT_SIZE_KEY]), integers[TASK_SLOTS_KEY],
                            integers[SINGLE_KEY_MIN_ROWS_KEY], integers[SINGLE_KEY_MAX_SPLITS_KEY],
                            integers[WINDOW_MIN_ROWS_KEY], integers[WINDOW_MAX_SPLITS_KEY])


@dataclass(frozen=True)
class SkewFound:
    """What the skew test found: ``skewed`` (index, size) pairs in index order, as the rules'
    ``SkewedPartitions``."""

    median: int
    threshold: int
    skewed: List[Tuple[int, int]]
    total: int
    slots: int

    @property
    def slot_share(self) -> int:
        return self.total // max(self.slots, 1)


def find_skewed(sizes: Sequence[int], settings: SkewSettings, slots: int,
                floor: Optional[int] = None) -> SkewFound:
    """The partitions of ``sizes`` that are skewed on ``slots`` task slots (``floor``: another
    floor than the settings', e.g. 0 for sizes that are not bytes)."""
    if not sizes:
        return SkewFound(0, 0, [], 0, slots)
    median = sorted(sizes)[len(sizes) // 2]
    total = sum(sizes)
    threshold = max(settings.floor if floor is None else floor,
                    int(median * settings.factor),
                    int(total // max(slots, 1) * settings.factor))
    return SkewFound(median, threshold, [(i, s) for i, s in enumerate(sizes) if s > threshold],
                     total, slots)


def split_size(sizes: Sequence[int], found: SkewFound, settings: SkewSettings) -> int:
    """The size of the pieces a skewed partition is read in: the average partition that is not
    skewed, at least ``spark.skewagg.skew.minSplitSize``."""
    skewed = {i for i, _ in found.skewed}
    normal = [s for i, s in enumerate(sizes) if i not in skewed]
    return max(settings.min_split, sum(normal) // len(normal) if normal else 0)
