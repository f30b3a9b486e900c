"""Which of my jobs would skewagg help? ``skewagg.advise(paths)`` reads Spark event logs, without a
JVM or a Spark session, and says, for every SQL execution, which stages a hot partition held up,
the operator that stage ran, what skewagg would do there, and what that would save.

For every stage of every SQL execution it applies skewagg's skew test (the rules' own, from
:mod:`skewagg.skewtest`) to the bytes each task read from the stage's input shuffles, as the
rules test a shuffle's partition sizes: a task is skewed when it read more than
``spark.skewagg.skew.factor`` times the median task and than that factor times an even share of
the stage's bytes on the task slots (``task_slots``, else ``spark.skewagg.skew.taskSlots`` of the
application's settings, else the application's executor cores). Stages that are skewed apart from
the ``spark.skewagg.skew.minPartitionSize`` floor are reported too, with the floor as the reason
skewagg would leave them alone.

The operator is found through the plan: the SQL metrics of a plan node (``sparkPlanInfo``, at the
execution's start and at each adaptive update) are accumulators, and the accumulators a stage's
tasks updated name the nodes that ran in it. Makespans are estimates from the measured task
times (:func:`_estimate`): a stage's tasks list-scheduled in task order onto the slots
(:func:`skewagg.tasktimes.makespan`), every task costing at least the stage's shortest; with
skewagg, each skewed task's pieces taking that plus an even share of the rest of its time (time in
proportion to bytes read; a bucketed scan's and a DISTINCT's pieces in stages of their own), and,
where skewagg aggregates before the shuffle, each task's time beyond the shortest scaled by the
rows its operators would read after that aggregate (:func:`_after_local`, an estimate; after a
join, the merge after its shuffle where skewagg would keep it, :func:`_reduce_work`) over the
rows they read, or the skewed task taking the stage's median time where the log does not count
the groups; the map tasks' aggregation and the partial results' exchanges are not counted. A
query's makespan is the sum of its stages'.

Below an aggregate grouping by more than the shuffle's keys (a DISTINCT's first step) the split
rules test the shuffle in rows (``GroupsBeyondShuffleKeys``), and so does this module
(:func:`skewagg.skewtest.measure_rows`), on the rows skewagg's deduplication before the shuffle
would leave where it plans one.
"""

from __future__ import annotations

import base64
import html
import io
import math
import re
import statistics
from dataclasses import dataclass, field
from typing import (
    Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple, Union)

from skewagg.eventlog import (
    Application, EventLogError, Execution, PlanNode, Stage, find_logs, read_application)
from skewagg.errors import SkewAggError
from skewagg.skewtest import (
    SINGLE_KEY_MIN_ROWS_KEY, SKEW_FACTOR_KEY, SKEW_FLOOR_KEY, SPLIT_SIZE_KEY, TASK_SLOTS_KEY,
    WINDOW_MIN_ROWS_KEY, RowsMeasure, SkewFound, SkewSettings, default_settings,
    find_by_slot_share, find_skewed, measure_rows, split_size)
from skewagg.tasktimes import makespan, query_makespan

AGGREGATES = {"HashAggregate", "SortAggregate", "ObjectHashAggregate"}
JOINS = {"SortMergeJoin", "ShuffledHashJoin"}
BOUNDARIES = {"Exchange", "ShuffleQueryStage", "BroadcastQueryStage", "ReusedExchange",
              "BroadcastExchange", "TableCacheQueryStage"}
HOLISTIC = {"percentile", "percentile_disc", "percentile_cont", "median", "mode"}
SPLIT_HOLISTIC = {"percentile", "percentile_disc", "percentile_cont", "median"}
WINDOW_FUNCTIONS = {"sum", "count", "avg", "min", "max", "first", "last", "first_value",
                    "last_value", "nth_value", "row_number", "rank", "dense_rank",
                    "percent_rank", "cume_dist", "ntile", "lag", "lead"}
_READ_METRICS = ("remote bytes read", "local bytes read")
_RECORDS_READ = "records read"


def _size(n: float) -> str:
    from skewagg.report import format_bytes

    return format_bytes(n)


@dataclass
class StageAdvice:
    """One skewed stage: the operator it ran, what skewagg would do, and the estimated makespans
    (milliseconds on ``slots`` task slots) without and with skewagg."""

    app_id: str
    app_name: str
    log: str
    execution_id: int
    description: str
    stage_id: int
    attempt: int
    operator: str  # "aggregate over a join", ...
    node: str  # the plan node's text
    rewrite: Optional[str]  # skewagg's rewrite, None when it would leave the stage alone
    decision: str  # "would rewrite: ..." / "left alone: ..." / "not skewed: ..."
    durations_ms: List[int]
    sizes: List[int]  # bytes each task read from the input tested
    skewed_tasks: List[int]  # task indexes (positions in durations_ms)
    slots: int
    makespan_ms: float
    estimated_ms: float
    query_makespan_ms: float = 0.0
    query_estimated_ms: float = 0.0
    estimate: str = ""

    @property
    def saved_ms(self) -> float:
        return self.makespan_ms - self.estimated_ms

    @property
    def longest_ms(self) -> int:
        return max(self.durations_ms, default=0)

    @property
    def median_ms(self) -> float:
        return float(statistics.median(self.durations_ms)) if self.durations_ms else 0.0

    def row(self) -> Dict[str, Any]:
        return {
            "app_id": self.app_id, "app_name": self.app_name, "execution": self.execution_id,
            "description": self.description, "stage": self.stage_id, "attempt": self.attempt,
            "operator": self.operator, "rewrite": self.rewrite, "decision": self.decision,
            "tasks": len(self.durations_ms), "longest_task_ms": self.longest_ms,
            "median_task_ms": self.median_ms, "skewed_tasks": len(self.skewed_tasks),
            "largest_read_bytes": max(self.sizes, default=0), "slots": self.slots,
            "stage_makespan_ms": self.makespan_ms, "stage_estimated_ms": self.estimated_ms,
            "query_makespan_ms": self.query_makespan_ms,
            "query_estimated_ms": self.query_estimated_ms, "saved_ms": self.saved_ms,
        }


@dataclass
class AdviceReport:
    """The result of :func:`advise`: skewed stages ranked by the makespan skewagg would save.
    ``str()`` is a text table, notebooks render HTML, :meth:`to_html` writes a page with a plot
    per stage."""

    stages: List[StageAdvice]
    applications: List[Tuple[str, str, str, int]]  # (log, app id, name, slots)
    errors: List[EventLogError] = field(default_factory=list)
    settings: Dict[str, str] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)

    @property
    def rewritten(self) -> List[StageAdvice]:
        return [s for s in self.stages if s.rewrite]

    def _headline(self) -> str:
        slots = sorted({a[3] for a in self.applications})
        on = ", ".join(str(s) for s in slots) or "-"
        return (f"skewagg advisor: {len(self.applications)} application(s), "
                f"{len(self.stages)} skewed stage(s), {len(self.rewritten)} that skewagg would "
                f"rewrite; makespans on {on} task slots (estimates from measured task times)")

    def _table(self) -> Tuple[List[str], List[List[str]]]:
        header = ["rank", "app", "query", "stage", "operator", "skewagg", "longest/median task",
                  "stage makespan", "est. with skewagg", "query makespan", "est. with skewagg"]
        body = []
        for i, s in enumerate(self.stages, start=1):
            body.append([
                str(i), s.app_id, f"{s.execution_id} {s.description[:24]}".strip(),
                str(s.stage_id) + (f".{s.attempt}" if s.attempt else ""), s.operator,
                _rule(s.rewrite), f"{s.longest_ms} / {s.median_ms:.0f} ms",
                f"{s.makespan_ms:.0f} ms", f"{s.estimated_ms:.0f} ms",
                f"{s.query_makespan_ms:.0f} ms", f"{s.query_estimated_ms:.0f} ms"])
        return header, body

    def __str__(self) -> str:
        lines = [self._headline()]
        header, body = self._table()
        if body:
            widths = [max(len(r[c]) for r in [header] + body) for c in range(len(header))]
            left = {1, 2, 4, 5}
            fmt = lambda r: "  ".join(  # noqa: E731
                v.ljust(w) if c in left else v.rjust(w)
                for c, (v, w) in enumerate(zip(r, widths))).rstrip()
            lines += [fmt(header)] + [fmt(r) for r in body]
            lines.append("")
            for i, s in enumerate(self.stages, start=1):
                lines.append(f"{i}. {s.app_id} query {s.execution_id} stage {s.stage_id}: "
                             f"{s.operator}: {s.node}")
                lines.append(f"   {s.decision}")
                if s.estimate:
                    lines.append(f"   estimate: {s.estimate}")
        else:
            lines.append("no stage is skewed by skewagg's test: skewagg would not change these "
                         "jobs' stage times.")
        lines += [f"note: {n}" for n in self.notes]
        lines += [f"error: {e}" for e in self.errors]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"AdviceReport({len(self.applications)} applications, {len(self.stages)} skewed "
                f"stages, {len(self.rewritten)} rewritten, {len(self.errors)} errors)")

    def _html_body(self, plots: bool) -> str:
        esc = html.escape
        parts = [f"<p><b>{esc(self._headline())}</b></p>"]
        header, body = self._table()
        if body:
            parts.append("<table border='1' style='border-collapse:collapse'><tr>" +
                         "".join(f"<th>{esc(h)}</th>" for h in header) + "</tr>")
            parts += ["<tr>" + "".join(f"<td>{esc(v)}</td>" for v in r) + "</tr>" for r in body]
            parts.append("</table>")
        else:
            parts.append("<p>No stage is skewed by skewagg's test.</p>")
        for i, s in enumerate(self.stages, start=1):
            parts.append(f"<h3>{i}. {esc(s.app_id)} query {s.execution_id} "
                         f"({esc(s.description[:80])}), stage {s.stage_id}: "
                         f"{esc(s.operator)}</h3>")
            parts.append(f"<p><code>{esc(s.node)}</code></p><p>{esc(s.decision)}</p>")
            if s.estimate:
                parts.append(f"<p><i>Estimate:</i> {esc(s.estimate)}</p>")
            if plots:
                image = _stage_png(s)
                if image:
                    parts.append(f"<img alt='task times of stage {s.stage_id}' "
                                 f"src='data:image/png;base64,{image}'/>")
        parts += [f"<p>Note: {esc(n)}</p>" for n in self.notes]
        parts += [f"<p style='color:#b00'>Error: {esc(str(e))}</p>" for e in self.errors]
        return "".join(parts)

    def _repr_html_(self) -> str:
        return f"<div>{self._html_body(plots=False)}</div>"

    def to_html(self, path: Optional[str] = None) -> str:
        """A standalone HTML page: the ranked table, and per stage the decision and a plot of
        its task times (needs matplotlib, else the page has no plots). Written to ``path`` if
        given; returns the HTML."""
        try:
            import matplotlib  # noqa: F401
            plots = True
        except ImportError:  # pragma: no cover - depends on the environment
            plots = False
        page = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>skewagg advisor</title>"
                "<style>body{font-family:sans-serif;margin:1.5em}td,th{padding:2px 6px}"
                "</style></head><body><h2>Will skewagg help these jobs?</h2>"
                f"{self._html_body(plots)}</body></html>")
        if not plots:
            page = page.replace("</body>", "<p>Plots need matplotlib: pip install "
                                "'skewagg[plot]'.</p></body>")
        if path:
            with open(path, "w", encoding="utf-8") as out:
                out.write(page)
        return page

    def to_pandas(self) -> Any:
        """One row per skewed stage (the columns of :meth:`StageAdvice.row`)."""
        import pandas as pd  # optional: pip install skewagg[plot]

        return pd.DataFrame([s.row() for s in self.stages])

    def plot(self, path: Optional[str] = None) -> Any:
        """Task times of every skewed stage, one chart each, the skewed tasks marked. Returns the
        matplotlib Figure and saves it to ``path`` if given."""
        from skewagg.report import _pyplot

        plt = _pyplot()
        n = max(1, len(self.stages))
        fig, axes = plt.subplots(n, 1, figsize=(8, 2.6 * n), squeeze=False)
        for ax, stage in zip(axes[:, 0], self.stages):
            _draw_stage(ax, stage)
        if not self.stages:
            axes[0][0].set_title("no skewed stage")
        fig.tight_layout()
        if path:
            fig.savefig(path, dpi=100)
        return fig


def _rule(rewrite: Optional[str]) -> str:
    """The table's short name of a rewrite: its rules, in the parentheses that end its text."""
    if not rewrite:
        return "left alone"
    match = re.search(r"\(([^()]*)\)$", rewrite)
    return match.group(1) if match else rewrite


def _draw_stage(ax: Any, s: StageAdvice) -> None:
    colors = ["C3" if i in s.skewed_tasks else "C0" for i in range(len(s.durations_ms))]
    ax.bar(range(len(s.durations_ms)), s.durations_ms, color=colors)
    share = sum(s.durations_ms) / max(1, s.slots)
    ax.axhline(share, color="C2", linestyle="--", label=f"even share on {s.slots} slots")
    for i in s.skewed_tasks:
        ax.annotate("straggler", (i, s.durations_ms[i]), ha="center", va="bottom", color="C3")
    ax.set_xlabel("task (index)")
    ax.set_ylabel("ms")
    ax.set_title(f"{s.app_id} query {s.execution_id} stage {s.stage_id}: {s.operator}; "
                 f"makespan@{s.slots} {s.makespan_ms:.0f} ms, est. {s.estimated_ms:.0f} ms "
                 "with skewagg", fontsize=9)
    ax.legend(fontsize=8)


def _stage_png(stage: StageAdvice) -> str:
    from skewagg.report import _pyplot

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 2.8))
    _draw_stage(ax, stage)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


# ---------------------------------------------------------------------------------------------
# The plan: which nodes ran in a stage


def _functions(desc: str) -> List[str]:
    """The aggregate functions of an aggregate node's text, e.g. ``sum(v#2L)``."""
    match = re.search(r"functions=\[(.*)\]", desc)
    return _split_top(match.group(1)) if match else []


def _keys(desc: str) -> List[str]:
    match = re.search(r"\(keys?=\[([^\]]*)\]", desc)
    return _split_top(match.group(1)) if match else []


def _split_top(text: str) -> List[str]:
    """``text`` split at the commas outside parentheses and brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:].strip())
    return parts


def _name(function: str) -> str:
    match = re.match(r"\s*(\w+)\(", function)
    return match.group(1).lower() if match else function


def _ids(text: str) -> set:
    return set(re.findall(r"#(\d+)", text))


def _is_partial(agg: PlanNode) -> bool:
    functions = _functions(agg.desc)
    return bool(functions) and all(_name(f).startswith(("partial_", "merge_")) for f in functions)


def _below(node: PlanNode) -> Iterable[PlanNode]:
    """The nodes below ``node`` in its stage (not crossing shuffles and query stages)."""
    for child in node.children:
        yield child
        if child.name not in BOUNDARIES:
            yield from _below(child)


def _exchange_under(node: PlanNode) -> Optional[PlanNode]:
    """The Exchange a boundary node reads (itself, or under a query stage / reuse)."""
    for candidate in node.walk():
        if candidate.name == "Exchange":
            return candidate
    return None


@dataclass
class _StagePlan:
    top: Optional[PlanNode]  # the aggregate, window or join the stage is about
    operator: str
    inputs: List[PlanNode]  # Exchange nodes the stage read
    join: Optional[PlanNode] = None
    kind: str = "other"
    first: Optional[PlanNode] = None  # the aggregate that reads the join or shuffle (its 1st step)
    shuffle_keys: Set[str] = field(default_factory=set)  # ids the shuffle(s) below hash on

    @property
    def groups_beyond_keys(self) -> bool:
        """The first step groups by an attribute the shuffle below does not hash on (a DISTINCT's
        deduplication of (k, i) over input hashed on k): the rules' GroupsBeyondShuffleKeys."""
        keys = _keys(self.first.desc) if self.first else []
        return bool(self.shuffle_keys) and any(not _ids(k) <= self.shuffle_keys for k in keys)

    @property
    def distinct(self) -> bool:
        return self.top is not None and any("distinct" in f for f in _functions(self.top.desc))

    @property
    def expands(self) -> bool:
        """Spark expands the rows per DISTINCT group (several DISTINCTs, or one with a FILTER)."""
        return self.top is not None and any(n.name == "Expand" for n in _below(self.top))


def _first_aggregate(top: PlanNode, bottom: PlanNode) -> PlanNode:
    """The lowest aggregate between ``bottom`` (a join, or the boundary of the shuffle read) and
    ``top``: the step that reads the join's or the shuffle's rows."""
    node = bottom.parent
    while node is not None and node is not top and node.name not in AGGREGATES:
        node = node.parent
    return node if node is not None else top


def _hash_keys(exchange: PlanNode) -> Set[str]:
    """The attribute ids an Exchange hashes on (``hashpartitioning(k#1L, 16)``)."""
    match = re.search(r"hashpartitioning\((.*?),\s*\d+\)", exchange.desc)
    return _ids(match.group(1)) if match else set()


def _stage_plan(execution: Execution, stage: Stage) -> _StagePlan:
    by_acc: Dict[int, PlanNode] = {}
    for plan in execution.plans:
        for node in plan.walk():
            for acc in node.metrics:
                by_acc[acc] = node
    nodes = {id(by_acc[a]): by_acc[a] for a in stage.accumulators if a in by_acc}
    ran = list(nodes.values())
    inputs = [n for n in ran if n.name == "Exchange" and any(
        a in stage.accumulators and name in _READ_METRICS + (_RECORDS_READ,)
        for a, name in n.metrics.items())]
    operators = [n for n in ran if n.name not in BOUNDARIES]
    windows = [n for n in operators if n.name == "Window"]
    aggregates = [n for n in operators if n.name in AGGREGATES and not _is_partial(n)]
    joins = [n for n in operators if n.name in JOINS]
    if windows:
        top = min(windows, key=lambda n: n.depth)
        return _StagePlan(top, "window", inputs, kind="window")
    if aggregates:
        top = min(aggregates, key=lambda n: n.depth)
        below = list(_below(top))
        join = next((n for n in below if n.name in JOINS), None)
        holistic = any(_name(f) in HOLISTIC for f in _functions(top.desc))
        kind = "holistic" if holistic else "aggregate"
        if join is not None:
            keys = set().union(*(_hash_keys(e) for e in inputs)) if inputs else set()
            return _StagePlan(top, ("holistic aggregate" if holistic else "aggregate") +
                              " over a join", inputs, join, kind + "-join",
                              _first_aggregate(top, join), keys)
        boundaries = [(n, _exchange_under(n)) for n in below if n.name in BOUNDARIES]
        user = next(((n, e) for n, e in boundaries if e and "REPARTITION_BY" in e.desc), None)
        if user is not None:
            return _StagePlan(top, ("holistic aggregate" if holistic else "aggregate") +
                              " over a repartition", inputs, kind=kind + "-repartition",
                              first=_first_aggregate(top, user[0]),
                              shuffle_keys=_hash_keys(user[1]))
        if any(n.name.startswith("Scan") and ("Bucketed: true" in n.desc or
                                              n.metadata.get("Bucketed") == "true")
               for n in below):
            return _StagePlan(top, "aggregate over a bucketed scan", inputs,
                              kind=kind + "-bucketed")
        return _StagePlan(top, "holistic aggregate" if holistic else "aggregate", inputs,
                          kind=kind)
    if joins:
        return _StagePlan(min(joins, key=lambda n: n.depth), "join", inputs, kind="join")
    return _StagePlan(None, "scan or exchange", inputs, kind="other")


def _reads(stage: Stage, exchange: PlanNode, names: Tuple[str, ...]) -> List[int]:
    accs = [a for a, n in exchange.metrics.items() if n in names]
    tasks = sorted(stage.tasks, key=lambda t: t.index)
    return [sum(t.updates.get(a, 0) for a in accs) for t in tasks]


def _one_side(agg: PlanNode, join: PlanNode) -> bool:
    """Whether the aggregate's functions read only one side of the join (by attribute ids)."""
    keys = set().union(*(_ids(k) for k in _keys(agg.desc))) if _keys(agg.desc) else set()
    needed = set().union(*(_ids(f) for f in _functions(agg.desc))) - keys \
        if _functions(agg.desc) else set()
    defined: Dict[str, set] = {}  # id -> ids of the expression a Project between computes
    for node in _below(agg):
        if node is join:
            break
        if node.name == "Project":
            for item in _split_top(node.desc[len("Project "):].strip("[] ")):
                match = re.search(r"AS \w+#(\d+)$", item)
                if match:
                    defined[match.group(1)] = _ids(item[:match.start()])
    resolved = set()
    for i in needed:
        resolved |= defined.get(i, {i})
    sides = [set().union(*(_ids(n.desc) for n in side.walk())) for side in join.children]
    if len(sides) != 2 or not resolved:
        return bool(sides) and not resolved  # count(*): reads no side
    return resolved <= sides[0] or resolved <= sides[1]


def _window_support(desc: str) -> Optional[str]:
    """Why skewagg would keep Spark's window (a function or frame it does not split), or None."""
    for match in re.finditer(r"windowspecdefinition\(", desc):
        depth, start = 0, match.start()
        while start > 0:
            ch = desc[start - 1]
            if ch in ")]":
                depth += 1
            elif ch in "([":
                if depth == 0:
                    break
                depth -= 1
            elif ch == "," and depth == 0:
                break
            start -= 1
        function = _name(desc[start:match.start()])
        if function not in WINDOW_FUNCTIONS:
            return f"the window function {function} is not split (docs/window.md)"
    for lower, upper in re.findall(r"specifiedwindowframe\(\w+, ([^,]+), ([^)]+\)?)\)", desc):
        if not lower.startswith("unboundedpreceding") or not upper.startswith(
                ("unboundedfollowing", "currentrow")):
            return (f"its frame ({lower.strip()}, {upper.strip()}) is neither the whole "
                    f"partition nor a running frame (docs/window.md)")
    return None


# ---------------------------------------------------------------------------------------------
# The advice


def _fmt(size: float, in_rows: bool) -> str:
    """A size as a test measured it: "61,234 rows", or "4.2 MiB"."""
    return f"{int(size):,} rows" if in_rows else _size(size)


def _not_skewed(where: str, sizes: Sequence[int], found: SkewFound, s: SkewSettings,
                at_floor: Optional[Sequence[int]] = None) -> str:
    """The rules' "not skewed" text (SkewAggDecision.NotSkewed); ``at_floor``: what the floor is
    compared with where ``sizes`` are rows (their size in memory)."""
    largest = max(range(len(sizes)), key=lambda i: sizes[i])
    ratio = f"{sizes[largest] / found.median:.1f}x" if found.median else "n/a x"
    if (at_floor if at_floor is not None else sizes)[largest] <= s.floor:
        why = f"below the {_size(s.floor)} floor ({SKEW_FLOOR_KEY})"
    elif sizes[largest] > s.factor * found.median or not found.against_median:
        why = (f"not more than {s.factor}x the per-slot share "
               f"{_fmt(found.slot_share, found.in_rows)} on {found.slots} task slots "
               f"({TASK_SLOTS_KEY})")
    else:
        why = f"not more than {s.factor}x the median ({SKEW_FACTOR_KEY})"
    return (f"not skewed: in {where}, the largest partition ({largest}) is "
            f"{_fmt(sizes[largest], found.in_rows)}, {ratio} the median "
            f"{_fmt(found.median, found.in_rows)}: {why}.")


def _skew_text(sizes: Sequence[int], found: SkewFound, verb: str = "read") -> str:
    pid, size = max(found.skewed, key=lambda x: x[1])
    if not found.against_median:  # the per-slot share alone (a window's test)
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
class _Decision:
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


@dataclass
class _Measures:
    """The shuffle a split rule would test, as it would test it: ``vanilla`` (the shuffle the log
    measured: in rows where the first step groups beyond its keys, else in bytes), ``local`` (the
    same shuffle after skewagg's local aggregate or deduplication before it, estimated; None
    where the log does not count the first step's groups), and ``scale``, each task's work with
    that local aggregate over its work without (:func:`_reduce_work`)."""

    vanilla: RowsMeasure
    local: Optional[RowsMeasure] = None
    scale: Dict[int, float] = field(default_factory=dict)


def _decide(plan: _StagePlan, sizes: List[int], rows: List[int], found: SkewFound,
            bare: SkewFound, s: SkewSettings, map_tasks: int, where: str,
            measures: _Measures) -> _Decision:
    """What skewagg would do with a stage whose sizes pass the test without the floor
    (``bare``); ``found``: the test with the floor; ``measures``: the split rules' test."""
    skew = _skew_text(sizes, bare)

    def pieces_of(m: RowsMeasure, cap: int) -> Tuple[int, Dict[int, int]]:
        piece = m.split_size(s)
        return piece, {i: min(cap, math.ceil(m.bytes[i] / piece)) for i, _ in m.found.skewed}

    def split(rewrite: str, cap: int, stages_apart: int = 0) -> _Decision:
        m = measures.vanilla
        if not m.found.skewed:
            return _Decision(None, "left alone: " + _not_skewed(where, m.sizes, m.found, s,
                                                                 m.at_floor))
        tested = _skew_text(m.sizes, m.found) if m.in_rows else skew
        piece, pieces = pieces_of(m, cap)
        if max(pieces.values()) < 2:
            return _Decision(None, f"left alone: {tested}, but pieces of {_size(piece)} "
                             f"({SPLIT_SIZE_KEY}) leave it whole. Lower {SPLIT_SIZE_KEY} to "
                             "split it.")
        return _Decision(rewrite, f"would rewrite: {rewrite}: {tested}, read in up to "
                         f"{max(pieces.values())} pieces of about {_size(piece)}.", pieces,
                         stages_apart=stages_apart)

    def local(rewrite: str, dedup: bool = False) -> _Decision:
        reach = ("one row per value and upstream task" if dedup else "one row per upstream task")
        return _Decision(rewrite, f"would rewrite: {rewrite} (planned for every such aggregate, "
                         f"whatever the sizes): {skew}; the hot key's rows are merged where "
                         f"they are read, and reach this stage as {reach}.",
                         local=True, scale=measures.scale, hot=[i for i, _ in bare.skewed])

    def local_then_split(first: str, first_rule: str, then: str, then_rule: str,
                         cap: int) -> _Decision:
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
            done.text += (f" No split: {after}, {tested}, but pieces of {_size(piece)} "
                          f"({SPLIT_SIZE_KEY}) leave it whole.")
            return done
        rewrite = f"{first}, then {then} ({first_rule}, {then_rule})"
        return _Decision(rewrite, f"would rewrite: {rewrite}: {skew}; {after}, {tested}, read "
                         f"in up to {max(pieces.values())} pieces of about {_size(piece)}.",
                         pieces, local=True, scale=measures.scale,
                         hot=[i for i, _ in bare.skewed], stages_apart=2)

    def hot_key(rewrite: str, min_rows: int, min_key: str, max_splits: int,
                needs_floor: bool) -> _Decision:
        if needs_floor and not found.skewed:
            return _Decision(None, "left alone: " + _not_skewed(where, sizes, found, s))
        hot = max(bare.skewed, key=lambda x: x[1])[0]
        if rows[hot] < min_rows:
            return _Decision(None, f"left alone: no hot key split: {skew}, about "
                             f"{rows[hot]:,} rows, under {min_key}={min_rows} (the hot key "
                             "holds at most that many).")
        if not bare.against_median:  # (a window: pieces of the split size, as its run cuts)
            piece = max(1, split_size(sizes, bare, s))
            pieces = {i: max(2, min(max_splits, math.ceil(sizes[i] / piece)))
                      for i, _ in bare.skewed}
        else:
            per_task = max(1.0, statistics.median(rows) if rows else 1.0)
            pieces = {i: max(2, min(max_splits, math.ceil(rows[i] / per_task)))
                      for i, _ in bare.skewed}
        return _Decision(rewrite, f"would rewrite: {rewrite}: {skew}; the hot key split into "
                         f"up to {max(pieces.values())} tasks.", pieces)

    kind = plan.kind
    if kind == "window":
        why = _window_support(plan.top.desc if plan.top else "")
        if why:
            return _Decision(None, f"left alone: Spark's window: {why}; {skew}.")
        return hot_key("hot keys of the window split by ranges of its order (SplitSkewedWindow)",
                       s.window_min_rows, WINDOW_MIN_ROWS_KEY, s.window_max_splits, True)
    if kind == "aggregate-join":
        assert plan.top is not None and plan.join is not None
        join_type = plan.join.desc.rsplit(",", 1)[-1].strip().split()[0] if "," in \
            plan.join.desc else ""
        functions = _functions(plan.top.desc)
        one_side = join_type != "FullOuter" and _one_side(plan.top, plan.join)
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
        functions = {_name(f) for f in _functions(plan.top.desc if plan.top else "")}
        if functions - SPLIT_HOLISTIC:
            return _Decision(None, "left alone: would rewrite to one shuffle of the raw rows "
                             "sorted by (keys, value) (PlanHolisticAggregatesSortBased), but "
                             f"{', '.join(sorted(functions - SPLIT_HOLISTIC))} is not split by "
                             f"value: the hot key stays in one task; {skew}.")
        return hot_key("one shuffle of the raw rows sorted by (keys, value), the hot key's exact "
                       "percentiles split by value across tasks (PlanHolisticAggregatesSortBased"
                       ", HotKeySplitAggregate)", s.single_key_min_rows,
                       SINGLE_KEY_MIN_ROWS_KEY, 256, False)
    if kind == "aggregate":
        return _Decision(None, "left alone: Spark's own plan already aggregates each task's rows "
                         "before the shuffle, so a hot key's rows are combined per task and "
                         f"there is nothing to split; {skew}.")
    if kind == "join":
        return _Decision(None, "left alone: no aggregate or window in this stage: skewagg "
                         "rewrites aggregates and windows over a hot key (a join alone: Spark's "
                         f"skew join, spark.sql.adaptive.skewJoin.enabled); {skew}.")
    return _Decision(None, f"left alone: no aggregate, join or window in this stage; {skew}.")


def _estimate(durations: List[int], decision: _Decision, slots: int,
              fastest_elsewhere: Optional[float] = None) -> float:
    """The stage's makespan with ``decision``. Every task costs at least the stage's shortest
    task time (what any task costs). Where skewagg aggregates before the shuffle, a task takes
    that plus the rest of its time scaled by its work with skewagg over its work without
    (reduce-side work in proportion to the rows its operators read, :func:`_reduce_work`), or the
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


def _writer(app: Application, execution: Execution, exchange: PlanNode) -> Optional[Stage]:
    """The stage that wrote ``exchange`` (its map tasks)."""
    writes = {a for a, n in exchange.metrics.items() if n.startswith("shuffle ")}
    for sid in execution.stage_ids:
        stage = app.last_attempt(sid)
        if stage and writes & stage.accumulators:
            return stage
    return None


def _rows_into_partial(writer: Stage, exchange: PlanNode) -> int:
    """The rows Spark's partial aggregate below ``exchange`` read in its map stage: the "number
    of output rows" of the first node below it that counts them, over the writer's tasks."""
    partial = next((n for n in _below(exchange) if n.name in AGGREGATES), None)
    for node in _below(partial) if partial else []:
        accs = [a for a, name in node.metrics.items() if name == "number of output rows"]
        if accs:
            return sum(t.updates.get(a, 0) for t in writer.tasks for a in accs)
    return sum(t.input_records + t.shuffle_records for t in writer.tasks)


def _advise_app(app: Application, settings: SkewSettings, slots: int) -> List[StageAdvice]:
    out = []
    for execution in sorted(app.executions.values(), key=lambda e: e.execution_id):
        stages = app.stages_of(execution)
        advised: List[Tuple[StageAdvice, _Decision]] = []
        for stage in stages:
            advice = _advise_stage(app, execution, stage, settings, slots)
            if advice:
                advised.append(advice)
        total = query_makespan((st.durations_ms for st in stages), slots)
        saved = sum(a.saved_ms for a, _ in advised)
        for advice, _ in advised:
            advice.query_makespan_ms = total
            advice.query_estimated_ms = total - saved
            out.append(advice)
    return out


def _output_rows(stage: Stage, node: PlanNode) -> List[int]:
    """The rows ``node`` output in each task of ``stage`` (index order); zeros where the log does
    not count them."""
    accs = [a for a, name in node.metrics.items() if name == "number of output rows"]
    return [sum(t.updates.get(a, 0) for a in accs)
            for t in sorted(stage.tasks, key=lambda t: t.index)]


def _written(writer: Optional[Stage], exchange: Optional[PlanNode], name: str) -> int:
    """The sum over the map tasks of ``writer`` of the exchange's SQL metric ``name``."""
    if writer is None or exchange is None:
        return 0
    accs = [a for a, n in exchange.metrics.items() if n == name]
    return sum(t.updates.get(a, 0) for t in writer.tasks for a in accs)


def _after_local(read: int, groups: int, typical: Tuple[float, float], map_tasks: int,
                 capacity: int) -> int:
    """The rows a reduce task would read after the local aggregate: a partition of more rows than
    the ``typical`` one's (rows, groups: the stage's medians) is taken as that typical part plus
    its hot part, the rows beyond it over the groups beyond it (at least one: a hot key), each
    merged as :func:`_merged_rows` estimates."""
    typical_read, typical_groups = typical
    if not 0 < typical_read < read or typical_groups <= 0:
        return _merged_rows(read, groups, map_tasks, capacity)
    base_read, base_groups = int(typical_read), int(min(groups, typical_groups))
    return (_merged_rows(base_read, base_groups, map_tasks, capacity)
            + _merged_rows(read - base_read, max(1, groups - base_groups), map_tasks, capacity))


def _merged_rows(read: int, groups: int, map_tasks: int, capacity: int) -> int:
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


def _measures(app: Application, execution: Execution, stage: Stage, plan: _StagePlan,
              sizes: List[int], rows: List[int], exchange: Optional[PlanNode],
              writer: Optional[Stage], settings: SkewSettings, slots: int) -> _Measures:
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
    records = _written(writer, exchange, "shuffle records written") or sum(rows)
    data_size = _written(writer, exchange, "data size")
    in_rows = plan.groups_beyond_keys and (plan.join is not None or plan.distinct)
    vanilla = measure_rows(sizes, records if in_rows else 0, data_size, settings, slots)
    if plan.first is None or writer is None or not any(rows):
        return _Measures(vanilla)
    groups = _output_rows(stage, plan.first)
    if not any(groups) or len(groups) != len(rows):
        return _Measures(vanilla)
    typical = (statistics.median(rows), statistics.median(groups))
    after = [_after_local(r, g, typical, len(writer.tasks), settings.local_capacity)
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
    work = {i: _reduce_work(r, a, g, merged)
            for i, (r, a, g) in enumerate(zip(rows, after, groups)) if r > 0}
    return _Measures(vanilla, local, work)


def _reduce_work(read: int, after: int, groups: int, merged: bool) -> float:
    """A reduce task's work with skewagg's local aggregate over its work without, counted in rows
    an operator reads: without, its ``read`` rows; with, the ``after`` rows the local aggregate
    would leave. Where those are merged after a join's shuffle, vanilla's join and aggregate read
    ``read`` rows each, skewagg's merge reads ``after`` and its join and final aggregate read the
    partition's ``groups`` each."""
    if merged:
        return min(1.0, (after + 2 * groups) / (2 * read))
    return after / read


def _bucket_bytes(execution: Execution, plan: _StagePlan, records: List[int]) -> List[int]:
    """The bytes of the buckets each task read, as the rules weigh buckets (their files' sizes):
    the bucketed scan's "size of files read" (a metric the driver sets) shared in proportion to
    the records each task read. The tasks' own "bytes read" can miss most of a Parquet read.
    Empty where the log has no such size."""
    scans = [n for n in _below(plan.top) if n.name.startswith("Scan")] if plan.top else []
    accs = [a for n in scans for a, name in n.metrics.items() if name == "size of files read"]
    size = sum(execution.driver_metrics.get(a, 0) for a in accs)
    total = sum(records)
    if size <= 0 or total <= 0:
        return []
    return [round(size * r / total) for r in records]


def _advise_stage(app: Application, execution: Execution, stage: Stage, settings: SkewSettings,
                  slots: int) -> Optional[Tuple[StageAdvice, _Decision]]:
    plan = _stage_plan(execution, stage)
    tasks = sorted(stage.tasks, key=lambda t: t.index)
    candidates = []  # (sizes, rows, exchange) per input, as the rules test each shuffle
    for exchange in plan.inputs:
        sizes = _reads(stage, exchange, _READ_METRICS)
        if any(sizes):
            candidates.append((sizes, _reads(stage, exchange, (_RECORDS_READ,)), exchange))
    if not candidates:
        if any(t.shuffle_bytes for t in tasks):
            candidates.append(([t.shuffle_bytes for t in tasks],
                               [t.shuffle_records for t in tasks], None))
        elif plan.kind.endswith("-bucketed"):
            records = [t.input_records for t in tasks]
            candidates.append((_bucket_bytes(execution, plan, records)
                               or [t.input_bytes for t in tasks], records, None))
    # A window's stage of one task (a window without PARTITION BY: its one key is the whole
    # table, which SplitSkewedWindow cuts by order) is tested by the per-slot share alone, as the
    # rule tests it. With more tasks the rule's run splits only the hot keys its sample finds,
    # which a log does not show: against the median too, where a hot key shows.
    one_task = plan.kind == "window" and len(tasks) == 1
    if not candidates or (len(tasks) < 2 and not one_task):
        return None
    sizes, rows, exchange = max(candidates, key=lambda c: max(c[0]))
    test = find_by_slot_share if one_task else find_skewed
    bare = test(sizes, settings, slots, floor=0)
    if not bare.skewed:
        return None
    found = test(sizes, settings, slots)
    writer = _writer(app, execution, exchange) if exchange is not None else None
    map_tasks = len(writer.tasks) if writer else 0
    if plan.kind == "holistic" and writer is not None and exchange is not None and sum(sizes):
        # Spark's partial aggregate sent one buffer per key and map task: the rows of a partition
        # are estimated from its share of the bytes and the rows that aggregate read.
        into = _rows_into_partial(writer, exchange)
        rows = [int(into * size / sum(sizes)) for size in sizes]
    where = "the join's input shuffles below" if plan.join is not None else (
        "the window's shuffle" if plan.kind == "window" else "the shuffle below")
    measures = _measures(app, execution, stage, plan, sizes, rows, exchange, writer, settings,
                         slots)
    decision = _decide(plan, sizes, rows, found, bare, settings, map_tasks or 1 << 30, where,
                       measures)
    durations = [t.duration_ms for t in tasks]
    before = makespan(durations, slots)
    # (One task: the shortest map task of its shuffle tells what any task costs.)
    elsewhere = (float(min(t.duration_ms for t in writer.tasks))
                 if len(tasks) == 1 and writer is not None and writer.tasks else None)
    after = _estimate(durations, decision, slots, elsewhere)
    hows = []
    if decision.local and decision.scale:
        hows.append(f"each task takes the stage's shortest task time plus the rest of its "
                    f"measured time scaled by the rows its operators would read after the local "
                    f"aggregate over the rows they read (the rows each of the {map_tasks} map "
                    f"tasks would leave of the groups this stage's first aggregate found, an "
                    f"estimate; after a join, merged after its shuffle where skewagg would "
                    f"merge them, then joined and aggregated as groups); the "
                    f"map tasks' times as measured (their aggregation is not counted)")
    elif decision.local:
        hows.append("the skewed task's measured time replaced by the stage's median task time "
                    "(the hot key's rows merged before the shuffle; the map tasks' extra work "
                    "is not counted)")
    if decision.pieces and decision.rewrite:
        fixed = ("the shortest task time of the stage that wrote its shuffle"
                 if elsewhere is not None else "the stage's shortest task time")
        hows.append(f"each skewed task's pieces taking {fixed} plus an "
                    "even share of the rest of its time (time in proportion to bytes read)"
                    + ("; the pieces in a stage of their own before the others"
                       if decision.stages_apart else "")
                    + ("; their rows regrouped on all the grouping keys in a stage of as many "
                       "tasks, each as long as a piece" if decision.stages_apart > 1 else "")
                    + "; the other exchanges skewagg adds are not counted")
    how = "; ".join(hows)
    estimate = (f"tasks list-scheduled in task order on {slots} slots; {how}" if how else "")
    advice = StageAdvice(
        app_id=app.app_id, app_name=app.name, log=app.path, execution_id=execution.execution_id,
        description=execution.description, stage_id=stage.stage_id, attempt=stage.attempt,
        operator=plan.operator, node=(plan.top.desc if plan.top else stage.name)[:300],
        rewrite=decision.rewrite, decision=decision.text, durations_ms=durations, sizes=sizes,
        skewed_tasks=[i for i, _ in bare.skewed], slots=slots, makespan_ms=before,
        estimated_ms=after, estimate=estimate)
    return advice, decision


def advise(paths: Union[str, Sequence[str]], task_slots: Optional[int] = None,
           conf: Optional[Mapping[str, str]] = None) -> AdviceReport:
    """Reads the Spark event logs under ``paths`` (files, directories of logs, rolling-log
    directories; compressed with Spark's codecs) and reports the stages skewagg would change.

    ``task_slots``: plan for this many task slots (as ``spark.skewagg.skew.taskSlots`` does)
    instead of each application's own. ``conf``: skewagg settings (``spark.skewagg.skew.*``, the
    hot-key splits' ``...split.minKeyRows``) over those in each application's Spark properties,
    over the defaults. A log that cannot be read is listed in the report's ``errors`` (file and
    line) and the other logs are still reported; raises :class:`~skewagg.errors.SkewAggError`
    when a path does not exist or when no log could be read.
    """
    names = [paths] if isinstance(paths, str) else list(paths)
    if not names:
        raise SkewAggError("advise() needs at least one event log file or directory")
    if task_slots is not None and task_slots < 1:
        raise SkewAggError(f"task_slots must be at least 1, got {task_slots}")
    logs = find_logs(names)
    if not logs:
        raise SkewAggError(f"no event log found under {', '.join(names)}")
    stages: List[StageAdvice] = []
    applications: List[Tuple[str, str, str, int]] = []
    errors: List[EventLogError] = []
    keys = set(default_settings())
    for name, files in logs:
        try:
            app = read_application(name, files)
        except EventLogError as exc:
            errors.append(exc)
            continue
        values = {k: v for k, v in app.properties.items() if k in keys}
        values.update({k: str(v) for k, v in (conf or {}).items()})
        settings = SkewSettings.of(values)
        slots = task_slots or settings.task_slots or app.task_slots
        applications.append((name, app.app_id, app.name, slots))
        stages += _advise_app(app, settings, slots)
    if not applications:
        raise SkewAggError("no event log could be read:\n" + "\n".join(str(e) for e in errors))
    stages.sort(key=lambda s: (-s.saved_ms, s.rewrite is None, s.app_id, s.execution_id,
                               s.stage_id))
    notes = ["makespans are estimates: the measured task times of each stage list-scheduled in "
             "task order on the task slots, stages one after another; with skewagg, the tasks' "
             "times are divided or scaled as the rewrite would change their work (see each "
             "stage)."]
    return AdviceReport(stages, applications, errors,
                        {k: v for k, v in (conf or {}).items()}, notes)
