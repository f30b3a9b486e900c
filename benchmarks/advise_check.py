"""The event-log advisor against the benchmark (issue 49's check).

    python benchmarks/bench.py --variants vanilla,skewagg@64 --repeats 3 \
        --event-log DIR --scenarios ...
    python benchmarks/advise_check.py DIR [--task-slots 64]

Runs `skewagg.advise` on the event log `bench.py --event-log` wrote and prints, per scenario and
data, one Markdown row: what the advisor names (operator and rewrite) on vanilla's runs and the
median of its estimated makespans of the query on the task slots, beside the median makespan
the same session measured (every stage's task times list-scheduled on the slots, summed, as the
benchmark's makespan@64) of vanilla's runs and of skewagg's with splits planned for 64 slots
(`skewagg@64`, or `skewagg` where the scenario has no such variant). The error is the estimate's
against skewagg's measured makespan, and must stay within 25%; the advisor must name every
skewed run and no uniform run (the exit status is 1 otherwise). The last column lists skewagg's
operators in the plans of skewagg's runs, to compare with the rewrite the advisor names. Warm-up
runs are not read.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from typing import Dict, List, Optional, Set, Tuple

import skewagg
from skewagg.advisor import StageAdvice
from skewagg.advisor.eventlog import PlanNode, find_logs, read_application
from skewagg.advisor.makespan import query_makespan

VARIANTS = ("skewagg@64", "skewagg")
Run = Tuple[str, str, str]  # scenario, data, variant
# Operators of skewagg's own in a plan (the rewrites the advisor names put them there).
OURS = ("SkewAgg", "Flushing", "HotKey", "Split", "Pieces", "(skew=true)")


def ours(plans: List[PlanNode]) -> Set[str]:
    """The names of skewagg's operators in ``plans``."""
    return {n.name for plan in plans for n in plan.walk() if any(w in n.name for w in OURS)}


def executions(logs: str,
               slots: int) -> Tuple[Dict[Run, Dict[int, float]], Dict[Run, Set[str]]]:
    """(scenario, data, variant) -> each measured run's execution id and its makespan on
    ``slots`` slots (stages summed); and -> skewagg's operators in its runs' plans."""
    runs: Dict[Run, Dict[int, float]] = {}
    operators: Dict[Run, Set[str]] = {}
    for name, files in find_logs([logs]):
        app = read_application(name, files)
        for execution in app.executions.values():
            words = (execution.description or "").split()
            if len(words) != 3:
                continue
            key = (words[0], words[1], words[2])
            runs.setdefault(key, {})[execution.execution_id] = query_makespan(
                (s.durations_ms for s in app.stages_of(execution)), slots)
            operators.setdefault(key, set()).update(ours(execution.plans))
    return runs, operators


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", help="the directory bench.py --event-log wrote")
    parser.add_argument("--task-slots", type=int, default=64)
    args = parser.parse_args(argv)
    report = skewagg.advise(args.logs, task_slots=args.task_slots)
    runs, operators = executions(args.logs, args.task_slots)
    advised: Dict[Tuple[str, str], Dict[int, List[StageAdvice]]] = {}
    for advice in report.stages:
        words = advice.description.split()
        key = (words[0], words[1], words[2]) if len(words) == 3 else None
        if key and key[2] == "vanilla" and advice.execution_id in runs[key] and advice.rewrite:
            advised.setdefault(key[:2], {}).setdefault(advice.execution_id, []).append(advice)
    print("| scenario | data | runs | advisor names | rewrite | estimated ms | measured ms "
          "| error | vanilla ms (advisor / measured) | skewagg's operators in the plan |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    failures = 0
    for scenario, data, _ in sorted(k for k in runs if k[2] == "vanilla"):
        vanilla = runs[(scenario, data, "vanilla")]
        named = advised.get((scenario, data), {})
        rewritten = [a for ids in named.values() for a in ids]
        variant = next((v for v in VARIANTS if (scenario, data, v) in runs), None)
        target = statistics.median(runs[(scenario, data, variant)].values()) if variant else None
        estimated = statistics.median(a[0].query_estimated_ms for a in named.values()) \
            if named else None
        error = ""
        if data == "uniform" and named:
            error = f"names {len(named)} of {len(vanilla)} uniform runs"
            failures += 1
        elif data == "skewed" and len(named) < len(vanilla):
            error = f"names {len(named)} of {len(vanilla)} skewed runs"
            failures += 1
        elif estimated is not None and target:
            ratio = estimated / target - 1
            error = f"{ratio:+.0%}"
            failures += abs(ratio) > 0.25
        names = "; ".join(sorted({a.operator for a in rewritten})) or "nothing"
        rewrites = "; ".join(sorted({a.rewrite or "" for a in rewritten}))
        logged = statistics.median(a[0].query_makespan_ms for a in named.values()) \
            if named else None
        print(f"| {scenario} | {data} | {len(vanilla)} | {names} | {rewrites} | "
              f"{'' if estimated is None else round(estimated)} | "
              f"{'' if target is None else f'{round(target)} ({variant})'} | {error} | "
              f"{'' if logged is None else round(logged)} / "
              f"{round(statistics.median(vanilla.values()))} | "
              f"{', '.join(sorted(operators.get((scenario, data, variant or ''), ())))} |")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
