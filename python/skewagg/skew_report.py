"""The skew report: how a DataFrame's rows spread over its keys and over Spark's hash partitions.

``skewagg.analyze(df, ["customer_id"])`` counts rows per key, finds the heaviest keys, places
every row in the partition Spark's hash shuffle on those keys would send it to (the expression
``pmod(hash(keys...), spark.sql.shuffle.partitions)`` that Spark's ``HashPartitioning`` uses),
and applies skewagg's skew test (``spark.skewagg.skew.factor`` x the per-slot share of the
whole and more than ``spark.skewagg.skew.minPartitionSize``) to the estimated partition sizes. It
runs three small Spark jobs over ``df`` (key counts are cached between two of them).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple, Union

from skewagg._sql import skew_test
from skewagg.advisor.skew_rule import (
    SKEW_FLOOR_KEY,
    TASK_SLOTS_KEY,
    SkewSettings,
    default_settings,
    find_skewed,
    piece_size,
)
from skewagg.errors import ColumnNotFoundError, SkewAggError
from skewagg.rendering import format_bytes, pyplot
from skewagg.session import is_loaded

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

def gini(frequencies: Sequence[Tuple[int, int]]) -> float:
    """Gini coefficient of key row counts, given as ``(rows per key, number of such keys)`` pairs.

    0 when every key has the same number of rows; close to 1 when one key holds nearly all rows.
    Exact: over the n keys in ascending order of rows x, G = 1 - sum of
    (2 * rows of the lighter keys + x) / (n * total rows).
    """
    keys = sum(n for _, n in frequencies)
    total = sum(c * n for c, n in frequencies)
    if keys == 0 or total == 0:
        return 0.0
    area = 0.0  # twice the area under the Lorenz curve, times keys * total
    below = 0
    for count, n in sorted(frequencies):
        # n keys of `count` rows each: trapezoids from `below` rising by `count` each step.
        area += n * (2 * below + count) + count * n * (n - 1)
        below += count * n
    return 1.0 - area / (keys * total)


@dataclass
class HeavyKey:
    key: Tuple[Any, ...]
    rows: int
    share: float


@dataclass
class SkewVerdict:
    """What skewagg's skew test says about the estimated hash partitions."""

    skewed_partitions: List[Tuple[int, int]]  # (partition, estimated bytes), largest first
    median_bytes: int
    threshold_bytes: int
    factor: float
    floor_bytes: int
    split_bytes: int
    slots: int = 1
    total_bytes: int = 0

    @property
    def skewed(self) -> bool:
        return bool(self.skewed_partitions)

    def describe(self, largest: Tuple[int, int]) -> str:
        pid, size = largest
        ratio = f"{size / self.median_bytes:.0f}x" if self.median_bytes else "many times"
        if not self.skewed:
            share = self.total_bytes // max(1, self.slots)
            if size <= self.floor_bytes:
                why = f"below the {format_bytes(self.floor_bytes)} floor ({SKEW_FLOOR_KEY})"
            else:
                why = (f"not more than {self.factor:g}x the per-slot share "
                       f"{format_bytes(share)} on {self.slots} slots ({TASK_SLOTS_KEY})")
            return (f"not skewed: largest partition {pid} is about {format_bytes(size)}, "
                    f"{ratio} the median {format_bytes(self.median_bytes)}, {why}. skewagg "
                    f"would leave an aggregate over a shuffle on these keys as Spark plans it.")
        pid, size = self.skewed_partitions[0]
        pieces = max(2, math.ceil(size / max(1, self.split_bytes)))
        more = len(self.skewed_partitions) - 1
        others = f" (and {more} more skewed partition{'s' if more > 1 else ''})" if more else ""
        return (f"skewed: partition {pid} is about {format_bytes(size)}, {ratio} the median "
                f"{format_bytes(self.median_bytes)}{others}, over "
                f"{self.factor:g}x the per-slot share on {self.slots} slots and the "
                f"{format_bytes(self.floor_bytes)} floor. When these keys reach the "
                f"aggregate through a shuffle that holds whole rows (a join or repartition on "
                f"them), skewagg (adaptive execution) splits that partition into up to "
                f"{pieces} pieces of about {format_bytes(self.split_bytes)} and exchanges the "
                f"partial results. A plain groupBy already aggregates partially before its "
                f"shuffle (Spark's own plan).")


@dataclass
class SkewReport:
    """The result of :func:`analyze`. ``str(report)`` is a text table; notebooks render HTML."""

    keys: List[str]
    rows: int
    distinct_keys: int
    heavy_keys: List[HeavyKey]
    key_frequencies: List[Tuple[int, int]]  # (rows per key, keys with that many rows)
    num_partitions: int
    partition_rows: List[int]  # rows per hash partition, by partition id
    partition_bytes: List[int]  # estimated bytes per hash partition
    row_bytes: float  # estimated average bytes of a row
    verdict: Optional[SkewVerdict] = None
    gini: float = 0.0
    notes: List[str] = field(default_factory=list)
    partitions_source: str = "spark.sql.shuffle.partitions"

    @property
    def empty(self) -> bool:
        return self.rows == 0

    def top_share(self, n: int) -> float:
        """The share of all rows held by the ``n`` heaviest keys."""
        if not self.rows:
            return 0.0
        remaining, held = n, 0
        for count, keys in sorted(self.key_frequencies, reverse=True):
            take = min(keys, remaining)
            held += take * count
            remaining -= take
            if remaining == 0:
                break
        return held / self.rows

    @property
    def largest_partition(self) -> Tuple[int, int]:
        """(partition id, rows) of the partition with the most rows."""
        if not self.partition_rows:
            return (0, 0)
        pid = max(range(len(self.partition_rows)), key=lambda i: self.partition_rows[i])
        return pid, self.partition_rows[pid]

    @property
    def median_partition_rows(self) -> int:
        """Rows of the median partition, as skewagg's rules take it (the upper middle one)."""
        if not self.partition_rows:
            return 0
        return sorted(self.partition_rows)[len(self.partition_rows) // 2]

    @property
    def decision(self) -> str:
        if self.empty or self.verdict is None:
            return "nothing to decide: the DataFrame has no rows."
        pid = max(range(len(self.partition_bytes)), key=lambda i: self.partition_bytes[i])
        return self.verdict.describe((pid, self.partition_bytes[pid]))

    def summary(self) -> List[Tuple[str, str]]:
        """The report's headline numbers as (label, value) pairs."""
        pid, largest = self.largest_partition
        median = self.median_partition_rows
        ratio = f"{largest / median:.1f}x the median" if median else "median partition is empty"
        return [
            ("keys", ", ".join(self.keys)),
            ("rows", f"{self.rows:,}"),
            ("distinct keys", f"{self.distinct_keys:,} (exact)"),
            ("top-1 key share", f"{self.top_share(1):.1%}"),
            ("top-10 keys share", f"{self.top_share(10):.1%}"),
            ("Gini of rows per key", f"{self.gini:.3f} (0 = even, 1 = one key)"),
            ("hash partitions", f"{self.num_partitions} ({self.partitions_source})"),
            ("largest partition", f"partition {pid}: {largest:,} rows, {ratio}"),
            ("median partition", f"{median:,} rows"),
            ("average row size", f"about {self.row_bytes:.0f} bytes (estimate, uncompressed)"),
            ("skewagg", self.decision),
        ]

    def __str__(self) -> str:
        lines = [f"Skew report for groupBy({', '.join(self.keys)})"]
        if self.empty:
            lines.append("  the DataFrame has no rows: nothing to report.")
            return "\n".join(lines)
        width = max(len(label) for label, _ in self.summary())
        lines += [f"  {label.ljust(width)}  {value}" for label, value in self.summary()]
        lines.append("")
        lines.append(f"  Heaviest keys (top {len(self.heavy_keys)}):")
        header = ("rank", "rows", "share", "key")
        table = [(str(i + 1), f"{k.rows:,}", _share(k.share), _key_text(k.key))
                 for i, k in enumerate(self.heavy_keys)]
        widths = [max(len(r[c]) for r in [header] + table) for c in range(3)]
        lines.append("    " + "  ".join(h.rjust(w) for h, w in zip(header, widths)) + "  key")
        for row in table:
            cells = "  ".join(v.rjust(w) for v, w in zip(row, widths))
            lines.append("    " + cells + "  " + row[3])
        lines += [f"  Note: {note}" for note in self.notes]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"SkewReport(keys={self.keys}, rows={self.rows}, "
                f"distinct_keys={self.distinct_keys}, top1={self.top_share(1):.3f}, "
                f"gini={self.gini:.3f})")

    def _repr_html_(self) -> str:
        esc = html.escape
        parts = [f"<div><b>Skew report for groupBy({esc(', '.join(self.keys))})</b>"]
        if self.empty:
            return parts[0] + "<p>The DataFrame has no rows: nothing to report.</p></div>"
        parts.append("<table>")
        parts += [f"<tr><th style='text-align:left'>{esc(k)}</th><td style='text-align:left'>"
                  f"{esc(v)}</td></tr>" for k, v in self.summary()]
        parts.append("</table><table><tr><th>rank</th><th>rows</th><th>share</th><th>key</th></tr>")
        parts += [f"<tr><td>{i + 1}</td><td>{k.rows:,}</td><td>{_share(k.share)}</td>"
                  f"<td>{esc(_key_text(k.key))}</td></tr>" for i, k in enumerate(self.heavy_keys)]
        parts.append("</table>")
        parts += [f"<p>Note: {esc(n)}</p>" for n in self.notes]
        return "".join(parts) + "</div>"

    def to_pandas(self) -> Any:
        """The heaviest keys as a pandas DataFrame: one column per key, then rows and share."""
        import pandas as pd  # optional: pip install skewagg[plot]

        return pd.DataFrame(
            [list(k.key) + [k.rows, k.share] for k in self.heavy_keys],
            columns=list(self.keys) + ["rows", "share"],
        )

    def partitions_to_pandas(self) -> Any:
        """Rows and estimated bytes per hash partition, as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame({"partition": range(len(self.partition_rows)),
                             "rows": self.partition_rows,
                             "estimated_bytes": self.partition_bytes})

    def plot(self, path: Optional[str] = None) -> Any:
        """Rank-frequency of keys (log-log) and the histogram of rows per hash partition.

        Returns the matplotlib Figure; with ``path``, also saves it there (PNG, SVG, ...).
        Needs matplotlib (``pip install skewagg[plot]``).
        """
        plt = pyplot()
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
        ranks: List[int] = []
        counts: List[int] = []
        for count, n in sorted(self.key_frequencies, reverse=True):
            start = len(ranks) + 1
            ranks += [start, start + n - 1]
            counts += [count, count]
        if ranks:
            left.plot(ranks, counts, marker=".", drawstyle="steps-post")
            left.set_xscale("log")
            left.set_yscale("log")
        left.set_xlabel("key rank (1 = heaviest)")
        left.set_ylabel("rows of the key")
        left.set_title(f"rows per key ({self.distinct_keys:,} keys)")
        if self.partition_rows:
            right.hist(self.partition_rows, bins=min(50, max(10, len(self.partition_rows) // 4)))
        right.set_xlabel("rows in the hash partition")
        right.set_ylabel("partitions")
        right.set_title(f"{self.num_partitions} hash partitions on {', '.join(self.keys)}")
        fig.tight_layout()
        if path:
            fig.savefig(path, dpi=100)
        return fig


def _share(share: float) -> str:
    return f"{share:.1%}" if share >= 0.001 or share == 0 else f"{share:.3%}"


def _key_text(key: Tuple[Any, ...]) -> str:
    return ", ".join("NULL" if v is None else str(v) for v in key)


def _check_keys(df: "DataFrame", keys: Union[str, Sequence[str]]) -> List[str]:
    names = [keys] if isinstance(keys, str) else list(keys)
    if not names:
        raise ColumnNotFoundError("analyze() needs at least one key column, e.g. keys=['user_id']")
    columns = df.columns
    lower = {c.lower(): c for c in columns}
    resolved = []
    for name in names:
        if name in columns:
            resolved.append(name)
        elif name.lower() in lower:
            resolved.append(lower[name.lower()])
        else:
            raise ColumnNotFoundError(
                f"key column {name!r} is not a column of the DataFrame. "
                f"Available columns: {', '.join(columns) or '(none)'}."
            )
    return resolved


def _row_bytes_expr(df: "DataFrame") -> Any:
    """An estimate of each row's size as Spark's UnsafeRow (what a shuffle writes, before
    compression): a null bitmap, 8 bytes per field, plus variable-length data rounded to 8."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, DecimalType, StringType

    fields = df.schema.fields
    fixed = 8 * ((len(fields) + 63) // 64) + 8 * len(fields)
    expr = F.lit(fixed).cast("long")
    for f in fields:
        col = F.col(f"`{f.name}`")
        if isinstance(f.dataType, (StringType, BinaryType)):
            length = F.octet_length(col)
        elif f.dataType.typeName() in ("array", "map", "struct"):
            length = F.octet_length(F.to_json(F.struct(col)))  # a rough stand-in for the layout
        elif isinstance(f.dataType, DecimalType) and f.dataType.precision > 18:
            length = F.lit(16)  # stored out of line
        else:
            continue  # fixed-width: its 8 bytes are counted above
        expr = expr + F.ceil(F.coalesce(length, F.lit(0)) / 8) * 8
    return expr


def _conf(spark: "SparkSession", key: str, default: str) -> str:
    value = spark.conf.get(key, None)
    return default if value is None else str(value)


def skew_verdict(spark: "SparkSession", partition_bytes: Sequence[int]) -> SkewVerdict:
    """skewagg's skew test on ``partition_bytes`` under ``spark``'s settings: the rules' own
    (the extension's ``skewagg_skew_test``, from classic and Spark Connect sessions alike) when
    skewagg is loaded, else :func:`python_skew_verdict`."""
    if not is_loaded(spark):
        return python_skew_verdict(spark, partition_bytes)
    found = skew_test(spark, partition_bytes)
    return SkewVerdict([(int(i), int(b)) for i, b in found["skewed"]], int(found["median"]),
                       int(found["threshold"]), float(found["factor"]), int(found["floor"]),
                       int(found["split"]), int(found["slots"]), int(found["total"]))


def python_skew_verdict(spark: "SparkSession", partition_bytes: Sequence[int]) -> SkewVerdict:
    """The same test as the rules' (``SkewedPartitions`` in the JVM), for a session without
    skewagg: tests check that the two agree."""
    settings = SkewSettings.of({key: _conf(spark, key, default)
                                for key, default in default_settings().items()})
    slots = settings.task_slots or _default_slots(spark)
    found = find_skewed(partition_bytes, settings, slots)
    skewed = sorted(found.skewed, key=lambda x: -x[1])
    target = piece_size(partition_bytes, found, settings) if partition_bytes else \
        settings.min_split
    return SkewVerdict(skewed, found.median, found.threshold, settings.factor, settings.floor,
                       target, slots, found.total)


def _default_slots(spark: "SparkSession") -> int:
    """The application's task slots as Python sees them: its default parallelism (a Spark
    Connect client, which has no SparkContext, plans for one slot)."""
    try:
        return max(1, int(spark.sparkContext.defaultParallelism))
    except Exception:  # noqa: BLE001 (Spark Connect raises its own "not supported" error)
        return 1


def analyze(
    df: "DataFrame",
    keys: Union[str, Sequence[str]],
    top: int = 20,
    num_partitions: Optional[int] = None,
) -> SkewReport:
    """Reports how ``df``'s rows spread over ``keys`` and over the hash partitions of a shuffle
    on them, and what skewagg would decide for an aggregate over such a shuffle.

    ``num_partitions`` defaults to ``spark.sql.shuffle.partitions``. Partition sizes in bytes
    are estimates (row count x estimated uncompressed row size), compared with skewagg's
    thresholds read from the session. Raises :class:`~skewagg.errors.ColumnNotFoundError` for a
    key that is not a column. An empty DataFrame gives an empty report.
    """
    from pyspark.sql import functions as F

    if top < 0:
        raise SkewAggError(f"top must not be negative, got {top}")
    names = _check_keys(df, keys)
    spark = df.sparkSession
    n = int(num_partitions or int(_conf(spark, "spark.sql.shuffle.partitions", "200")))
    source = "num_partitions" if num_partitions else "spark.sql.shuffle.partitions"
    if n < 1:
        raise SkewAggError(f"num_partitions must be at least 1, got {n}")
    cols = [F.col(f"`{k}`") for k in names]

    # Rows and estimated bytes per hash partition: Spark's HashPartitioning sends a row to
    # pmod(murmur3 hash(keys), n).
    by_partition = (
        df.select(F.expr(f"pmod(hash({', '.join(f'`{k}`' for k in names)}), {n})").alias("p"),
                  _row_bytes_expr(df).alias("b"))
        .groupBy("p").agg(F.count(F.lit(1)).alias("rows"), F.sum("b").alias("bytes"))
        .collect()
    )
    partition_rows = [0] * n
    partition_bytes = [0] * n
    for r in by_partition:
        partition_rows[r["p"]] = int(r["rows"])
        partition_bytes[r["p"]] = int(r["bytes"])
    rows = sum(partition_rows)
    if rows == 0:
        return SkewReport(names, 0, 0, [], [], n, partition_rows, partition_bytes, 0.0)

    counts = df.groupBy(*cols).agg(F.count(F.lit(1)).alias("__rows")).cache()
    try:
        # Ties in key order, so that the same data gives the same report.
        heavy = counts.orderBy(F.desc("__rows"), *cols).limit(top).collect() if top else []
        frequencies = [(int(r[0]), int(r[1]))
                       for r in counts.groupBy("__rows").count().collect()]
    finally:
        counts.unpersist()
    heavy_keys = [HeavyKey(tuple(r[k] for k in range(len(names))), int(r["__rows"]),
                           int(r["__rows"]) / rows) for r in heavy]

    verdict = skew_verdict(spark, partition_bytes)
    notes = [
        "partition bytes are estimates: rows x Spark's uncompressed row size; shuffle files are "
        "compressed, so Spark measures smaller sizes at run time.",
    ]
    if _conf(spark, "spark.sql.adaptive.enabled", "true").lower() != "true":
        notes.append("adaptive execution is off (spark.sql.adaptive.enabled=false): skewagg's "
                     "run-time splits need it; only SKEW_AGG-hinted and bucketed rewrites apply.")
    return SkewReport(
        keys=names, rows=rows, distinct_keys=sum(k for _, k in frequencies),
        heavy_keys=heavy_keys, key_frequencies=frequencies, num_partitions=n,
        partition_rows=partition_rows, partition_bytes=partition_bytes,
        row_bytes=sum(partition_bytes) / rows, verdict=verdict, gini=gini(frequencies),
        notes=notes, partitions_source=source,
    )
