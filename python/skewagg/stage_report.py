"""Per-stage task times of your own queries: ``skewagg.stage_report``.

::

    with skewagg.stage_report(spark) as report:
        df.write.parquet("out")
    print(report)            # per stage: tasks, max/median task time and records, makespans
    report.plot("tasks.png")

or ``report = skewagg.stage_report(spark, df.collect)``. Task times come from a Spark listener in
the extension (the one the benchmark suite uses); on a Spark Connect client, which cannot attach
one, the jobs run with a job tag (``spark.addTag``) and the server's record of that tag's tasks
is read back with ``SELECT * FROM skewagg_task_times('<tag>')``. The makespan on N slots
list-schedules a stage's measured task durations, in task order, onto N slots, and adds the
stages up: what those tasks would take on N cores, where one hot task, not the core count,
decides a stage's time (see :mod:`skewagg.advisor.makespan`). It is a simulation from measured
durations, not a measurement on N cores.
"""

from __future__ import annotations

import html
import re
import statistics
import uuid
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Sequence, Tuple, TypeVar

from skewagg._bridge import bridge, is_connect
from skewagg._sql import TAG_PREFIX, task_times
from skewagg.advisor.makespan import QueryTimes, StageTimes, makespan
from skewagg.rendering import pyplot
from skewagg.session import require_loaded

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

DEFAULT_SLOTS = (64, 512)

T = TypeVar("T")


class TaskTimeRecorder:
    """Records the task times of the queries run through :meth:`measure` (classic PySpark)."""

    def __init__(self, spark: "SparkSession") -> None:
        self._recorder = bridge(spark, instead=(
            "use skewagg.stage_report(spark), which reads the task times of tagged jobs through "
            "SQL (SELECT * FROM skewagg_task_times('skewagg-...') after spark.addTag)")
        ).attachTaskTimeRecorder(spark.sparkContext._jsc.sc())

    def clear(self) -> None:
        """Forgets the tasks recorded so far."""
        self._recorder.clear()

    def snapshot(self) -> QueryTimes:
        """The tasks recorded since :meth:`clear` (waits for Spark to deliver every event)."""
        return QueryTimes.from_json(self._recorder.snapshotJson())

    def measure(self, action: Callable[[], T]) -> Tuple[T, QueryTimes]:
        self.clear()
        result = action()
        return result, self.snapshot()

    def close(self) -> None:
        self._recorder.detach()


class StageReport:
    """Task times of the jobs run inside ``with``, or by the action passed to
    :func:`stage_report`. ``str()`` is a text table, notebooks show HTML."""

    def __init__(self, spark: "SparkSession", slots: Sequence[int] = DEFAULT_SLOTS,
                 label: str = "") -> None:
        if not slots or any(int(n) < 1 for n in slots):
            raise ValueError(f"slots must be positive slot counts, got {list(slots)}")
        self._spark = spark
        self.slots: Tuple[int, ...] = tuple(int(n) for n in slots)
        self.label = label
        self.times: Optional[QueryTimes] = None
        self._recorder: Optional[TaskTimeRecorder] = None
        self._tag: Optional[str] = None

    def __enter__(self) -> "StageReport":
        require_loaded(self._spark)
        if is_connect(self._spark):
            # No listener can be attached from a client: the jobs are tagged, and the server's
            # record of the tag's tasks read back (skewagg_task_times).
            self._tag = f"{TAG_PREFIX}report-{uuid.uuid4().hex}"
            self._spark.addTag(self._tag)
            return self
        self._recorder = TaskTimeRecorder(self._spark)
        self._recorder.clear()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._tag is not None:
            tag, self._tag = self._tag, None
            self._spark.removeTag(tag)
            self.times = QueryTimes.from_rows(task_times(self._spark, tag))
            return
        assert self._recorder is not None
        try:
            self.times = self._recorder.snapshot()
        finally:
            self._recorder.close()
            self._recorder = None

    @property
    def stages(self) -> List[StageTimes]:
        if self.times is None:
            raise RuntimeError("nothing recorded yet: use `with stage_report(spark) as r:` and "
                               "read the report after the with block")
        return self.times.stages

    def makespan(self, slots: int) -> float:
        """Simulated milliseconds of every recorded stage, run one after another, on ``slots``."""
        return sum(makespan(s.durations_ms, slots) for s in self.stages)

    def rows(self) -> List[dict]:
        """One dict per stage: the numbers of the table, plus ``makespan_ms_<N>`` per slot count."""
        out = []
        for s in self.stages:
            records = s.records or [0]
            row = {
                "stage": s.stage if not s.attempt else f"{s.stage}.{s.attempt}",
                "name": re.sub(r" at \S*/", " at ", s.name), "tasks": len(s.durations_ms),
                "max_ms": s.max_ms,
                "median_ms": s.median_ms, "max_records": max(records),
                "median_records": float(statistics.median(records)), "records": sum(records),
                "bytes": sum(s.bytes),
            }
            for n in self.slots:
                row[f"makespan_ms_{n}"] = makespan(s.durations_ms, n)
            out.append(row)
        return out

    def to_pandas(self) -> Any:
        import pandas as pd  # optional: pip install skewagg[plot]

        return pd.DataFrame(self.rows())

    def _table(self) -> Tuple[List[str], List[List[str]], List[str]]:
        header = ["stage", "tasks", "max ms", "median ms", "max records", "median records",
                  "bytes read"] + [f"makespan@{n}" for n in self.slots] + ["name"]
        body = [[str(r["stage"]), str(r["tasks"]), str(r["max_ms"]), f"{r['median_ms']:.0f}",
                 f"{r['max_records']:,}", f"{r['median_records']:,.0f}", f"{r['bytes']:,}"]
                + [f"{r[f'makespan_ms_{n}']:.0f} ms" for n in self.slots] + [r["name"][:40]]
                for r in self.rows()]
        total = ["all", str(sum(len(s.durations_ms) for s in self.stages)), "", "", "", "", ""] + \
            [f"{self.makespan(n):.0f} ms" for n in self.slots] + [""]
        return header, body, total

    def __str__(self) -> str:
        title = f"Stage report{(' (' + self.label + ')') if self.label else ''}: " \
                f"{len(self.stages)} stages; makespan = tasks list-scheduled on N slots " \
                f"(simulated from measured task times)"
        header, body, total = self._table()
        widths = [max(len(r[c]) for r in [header, total] + body) for c in range(len(header))]
        fmt = lambda r: "  ".join(  # noqa: E731
            v.ljust(w) if c == len(header) - 1 else v.rjust(w)
            for c, (v, w) in enumerate(zip(r, widths))).rstrip()
        return "\n".join([title, fmt(header)] + [fmt(r) for r in body] + [fmt(total)])

    def _repr_html_(self) -> str:
        header, body, total = self._table()
        cell = lambda tag, v: f"<{tag}>{html.escape(v)}</{tag}>"  # noqa: E731
        rows = ["<tr>" + "".join(cell("th", h) for h in header) + "</tr>"]
        rows += ["<tr>" + "".join(cell("td", v) for v in r) + "</tr>" for r in body + [total]]
        title = f"<b>Stage report {html.escape(self.label)}</b>"
        return f"<div>{title}<table>{''.join(rows)}</table></div>"

    def __repr__(self) -> str:
        if self.times is None:
            return "StageReport(not recorded yet)"
        spans = ", ".join(f"makespan@{n}={self.makespan(n):.0f}ms" for n in self.slots)
        return f"StageReport({len(self.stages)} stages, {spans})"

    def plot(self, path: Optional[str] = None, compare: Optional["StageReport"] = None) -> Any:
        """Task durations per stage (one box per stage, every task a dot); with ``compare``, the
        two reports side by side on one time axis (e.g. skewagg off, then on). Returns the
        matplotlib Figure and saves it to ``path`` if given."""
        plt = pyplot()
        reports = [self] + ([compare] if compare is not None else [])
        fig, axes = plt.subplots(1, len(reports), figsize=(6 * len(reports), 4), sharey=True,
                                 squeeze=False)
        for ax, report in zip(axes[0], reports):
            data = [s.durations_ms or [0] for s in report.stages]
            labels = [str(s.stage) for s in report.stages]
            if data:
                ax.boxplot(data, showfliers=False)
                for i, durations in enumerate(data, start=1):
                    ax.plot([i] * len(durations), durations, ".", alpha=0.5, color="C1")
                ax.set_xticks(range(1, len(labels) + 1), labels)
            ax.set_xlabel("stage")
            ax.set_title(f"{report.label or 'tasks'}: makespan@{report.slots[0]} "
                         f"{report.makespan(report.slots[0]):.0f} ms")
        axes[0][0].set_ylabel("task duration (ms)")
        fig.tight_layout()
        if path:
            fig.savefig(path, dpi=100)
        return fig


def stage_report(spark: "SparkSession", action: Optional[Callable[[], Any]] = None,
                 slots: Sequence[int] = DEFAULT_SLOTS, label: str = "") -> StageReport:
    """Per-stage task times of the Spark jobs run by ``action``, or, without an action, a
    context manager recording the jobs run inside its ``with`` block::

        report = skewagg.stage_report(spark, df.collect, label="skewagg on")
        with skewagg.stage_report(spark) as report:
            df.write.parquet(path)

    ``slots``: the slot counts N of the simulated makespans (default 64 and 512).
    """
    report = StageReport(spark, slots, label)
    if action is None:
        return report
    with report:
        action()
    return report
