"""The README's measured numbers, written from the stored benchmark results (benchmarks/results/,
the same runs docs/benchmarks.md renders), with their spread and the A/A control beside them:
    python benchmarks/headline.py            rewrites README.md's numbers section
    python benchmarks/headline.py --check    exits 1 when README.md's section is not current
tests/test_readme_numbers.py checks it. Needs no Spark."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
README = ROOT / "README.md"
BEGIN = ("<!-- numbers: written by benchmarks/headline.py from benchmarks/results/; do not edit "
         "by hand -->")
END = "<!-- numbers: end -->"

DEFAULT_PLAN = "bench-rows20000000-default-plan-spark4.3.json"
LOCAL_GLOBAL = "bench-rows20000000-spark4.3.json"
HOLISTIC = "bench-rows10000000-holistic-spark4.3.json"
HOT_KEY_WINDOWS = "bench-rows8000000-hot-key-windows-spark4.3.json"
ONE_TASK_WINDOWS = "bench-rows20000000-window-one-task-spark4.3.json"


@dataclass(frozen=True)
class Row:
    """One line of the table: a scenario's makespan@64 (vanilla's and `variant`'s, from
    `makespans`) and `variant`'s wall time against vanilla's (from `walls`)."""

    title: str
    scenario: str
    data: str
    makespans: str
    variant: str
    walls: str


ROWS = [
    Row("join, then groupBy on the key", "join", "skewed", LOCAL_GLOBAL, "skewagg", DEFAULT_PLAN),
    Row("join, then groupBy on the key", "join", "uniform", LOCAL_GLOBAL, "skewagg", DEFAULT_PLAN),
    Row("join, then groupBy on a subset of keys", "subset-key", "skewed", LOCAL_GLOBAL, "skewagg",
        DEFAULT_PLAN),
    Row("join, then groupBy on a subset of keys", "subset-key", "uniform", LOCAL_GLOBAL,
        "skewagg", DEFAULT_PLAN),
    Row("`repartition(k)`, then groupBy", "repartition", "skewed", LOCAL_GLOBAL, "skewagg",
        DEFAULT_PLAN),
    Row("`repartition(k)`, then groupBy", "repartition", "uniform", LOCAL_GLOBAL, "skewagg",
        DEFAULT_PLAN),
    Row("join, then `count(DISTINCT x)`", "distinct", "skewed", LOCAL_GLOBAL, "skewagg",
        DEFAULT_PLAN),
    Row("join, then `count(DISTINCT x)`", "distinct", "uniform", LOCAL_GLOBAL, "skewagg",
        DEFAULT_PLAN),
    Row("exact `percentile` over a hot key (10M rows)", "percentile", "skewed", HOLISTIC,
        "skewagg@64", HOLISTIC),
    Row("`sum(v) OVER (PARTITION BY k)` (8M rows)", "window-sum", "skewed", HOT_KEY_WINDOWS,
        "skewagg@64", HOT_KEY_WINDOWS),
    Row("`row_number()` over a hot key (8M rows)", "window-row-number", "skewed",
        HOT_KEY_WINDOWS, "skewagg@64", HOT_KEY_WINDOWS),
    Row("running sum of doubles over a hot key (8M rows)", "window-running-sum", "skewed",
        HOT_KEY_WINDOWS, "skewagg@64", HOT_KEY_WINDOWS),
    Row("the same, `spark.skewagg.window.split.floatingPoint.enabled`", "window-running-sum",
        "skewed", HOT_KEY_WINDOWS, "skewagg@64+float", HOT_KEY_WINDOWS),
    Row("`row_number`, running sum, `lag` with no PARTITION BY", "window-global", "events",
        ONE_TASK_WINDOWS, "skewagg@64", ONE_TASK_WINDOWS),
    Row("the same over 4 keys", "window-few-keys", "events", ONE_TASK_WINDOWS, "skewagg@64",
        ONE_TASK_WINDOWS),
    Row("moving frames with no PARTITION BY", "window-moving", "events", ONE_TASK_WINDOWS,
        "skewagg@64", ONE_TASK_WINDOWS),
]

# The runs whose A/A control (vanilla's plan once more as a variant) bounds what parity means.
CONTROLS = (DEFAULT_PLAN, ONE_TASK_WINDOWS)


def load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def indexed(report: dict) -> Dict[Tuple[str, str, str], dict]:
    return {(r["scenario"], r["data"], r["variant"]): r for r in report["results"]}


def wall_ratio(r: dict, vanilla: dict) -> str:
    """Median wall time over vanilla's, then the range of the ratios within each repeat (there
    the two variants ran less than a minute apart, so each pair shares the machine's state)."""
    text = f"{r['wall_s'] / vanilla['wall_s']:.2f}"
    pairs = [a / b for a, b in zip(r.get("wall_s_runs", []), vanilla.get("wall_s_runs", []))]
    if len(pairs) > 1 and r is not vanilla:
        text += f" ({min(pairs):.2f}-{max(pairs):.2f})"
    return text


def commit_of(report: dict) -> str:
    """", at commit abc1234" (" + uncommitted changes" when the tree was not clean), if the
    report recorded it."""
    commit = report.get("commit")
    if not commit:
        return ""
    return f", at commit {commit}" + (" + uncommitted changes" if report.get("dirty") else "")


def measured(report: dict, r: dict) -> str:
    """When a row was measured, and at which commit (the row's, kept from an earlier run, else
    its report's; "commit not recorded" before the bench recorded it)."""
    when = str(r.get("when") or report["when"])[:10]
    return when + (commit_of(r if "commit" in r else report) or ", commit not recorded")


def label(variant: str) -> str:
    """How the table names a variant: skewagg as installed is its "default plan"."""
    return "default plan" if variant == "skewagg" else variant


def controls() -> List[Tuple[str, float]]:
    """(scenario/data, vanilla-again's median over vanilla's) of every control measured."""
    found = []
    for name in CONTROLS:
        by = indexed(load(name))
        for (scenario, data, variant), r in sorted(by.items()):
            vanilla = by.get((scenario, data, "vanilla"))
            if variant == "vanilla-again" and vanilla:
                found.append((f"{scenario}/{data}", r["wall_s"] / vanilla["wall_s"]))
    return found


def section() -> str:
    """The README's numbers, between its markers."""
    lines = [
        BEGIN,
        "",
        "| what | data | makespan@64, vanilla → skewagg | wall time on 2 cores vs vanilla "
        "(lowest-highest pair) | runs | measured |",
        "|---|---|---|---|---|---|",
    ]
    reports: Dict[str, dict] = {}
    differed = False
    for row in ROWS:
        for name in (row.makespans, row.walls):
            reports.setdefault(name, load(name))
        spans = indexed(reports[row.makespans])
        walls = indexed(reports[row.walls])
        vanilla = spans[(row.scenario, row.data, "vanilla")]
        ours = spans[(row.scenario, row.data, row.variant)]
        # skewagg as installed where the run has it (planned for the machine's slots).
        default = walls.get((row.scenario, row.data, "skewagg"))
        wall = default or walls[(row.scenario, row.data, row.variant)]
        wall_vanilla = walls[(row.scenario, row.data, "vanilla")]
        plan = label("skewagg" if default else row.variant)
        equal = all(r.get("equal_to_vanilla", True) for r in (ours, wall))
        differed = differed or not equal
        when = measured(reports[row.walls], wall)
        if row.makespans != row.walls:
            when = f"makespans {measured(reports[row.makespans], ours)}; wall {when}"
        lines.append(
            f"| {row.title} | {row.data} | {vanilla['makespan64_ms'] / 1000:.2f} s → "
            f"{ours['makespan64_ms'] / 1000:.2f} s ({label(row.variant)}) | "
            f"{wall_ratio(wall, wall_vanilla)} "
            f"({plan}) | {len(wall.get('wall_s_runs', []))} |"
            f" {when}{'' if equal else ', ROWS DIFFERED'} |")
    found = controls()
    low, high = min(r for _, r in found), max(r for _, r in found)
    median = statistics.median(r for _, r in found)
    prose = (
        ("Some rows differed from vanilla's (marked). " if differed else
         "Every variant's rows equal vanilla's in every run. ") +
        "Makespan@64: every stage's measured task times "
        "list-scheduled onto 64 slots (what a 64-core cluster would take); wall time: this "
        "2-core machine (`local[2]`), the median of the runs, variants alternating; in brackets "
        "the lowest and highest ratio of one pair of runs. \"default plan\" is skewagg as "
        "installed (planned for the machine's own 2 slots); \"skewagg@64\" is the plan made for "
        "64 slots, run on 2 cores (a running sum of doubles keeps Spark's plan unless "
        "`spark.skewagg.window.split.floatingPoint.enabled` allows another order of additions). "
        "The A/A control, vanilla's plan measured again as a variant "
        f"in the same runs, came out {low:.2f}-{high:.2f}x vanilla (median {median:.2f}, "
        f"{len(found)} scenarios): a wall-time ratio inside that range is parity, not a win. "
        "Every scenario, variant and Spark line: [docs/benchmarks.md](docs/benchmarks.md).")
    lines += ["", *textwrap.wrap(prose, 100, break_on_hyphens=False), "", END]
    return "\n".join(lines)


def with_section(readme: str, text: str) -> Optional[str]:
    """``readme`` with its numbers section replaced by ``text``; None without the markers."""
    start, end = readme.find(BEGIN), readme.find(END)
    if start < 0 or end < start:
        return None
    return readme[:start] + text + readme[end + len(END):]


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when README.md's numbers are not those of the results")
    args = parser.parse_args(argv)
    readme = README.read_text()
    updated = with_section(readme, section())
    if updated is None:
        print(f"README.md has no numbers section ({BEGIN!r} ... {END!r})", file=sys.stderr)
        return 1
    if args.check:
        if updated != readme:
            print("README.md's numbers are not the stored results': run python "
                  "benchmarks/headline.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(updated)
    return 0


if __name__ == "__main__":
    sys.exit(main())
