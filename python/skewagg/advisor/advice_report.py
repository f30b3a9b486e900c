"""What :func:`skewagg.advise` returns: the skewed stages of event logs, what skewagg would do
with each and the makespans it would save, as a text table, HTML with a plot per stage, pandas
rows or a matplotlib figure."""

from __future__ import annotations

import base64
import html
import io
import re
import statistics
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from skewagg.advisor.eventlog import EventLogError
from skewagg.rendering import pyplot


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
        plt = pyplot()
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
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 2.8))
    _draw_stage(ax, stage)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


