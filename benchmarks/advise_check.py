"""The event-log advisor against the benchmark (issue 49's check).

    python benchmarks/bench.py --variants vanilla,skewagg,skewagg@64 --repeats 1 \
        --event-log DIR --scenarios ...
    python benchmarks/advise_check.py DIR [--task-slots 64]

Runs `skewagg.advise` on the event log `bench.py --event-log` wrote and prints, per scenario and
data, one Markdown row: what the advisor names (operator and rewrite) on vanilla's run and its
estimated makespan of the query on the task slots, beside the makespans the same session
measured (every stage's task times list-scheduled on the slots, summed, as the benchmark's
makespan@64): vanilla's, and skewagg's with splits planned for 64 slots (`skewagg@64`, or
`skewagg` where the scenario has no such variant). The error is the estimate's against skewagg's
measured makespan, and must stay within 25%; on UNIFORM data the advisor must name nothing (the
exit status is 1 otherwise). The warm-up runs are not read; of several runs, the last counts.
"""

from __future__ import annotations

import argparse
import sys
from typing import Dict, List, Optional, Tuple

import skewagg
from skewagg.eventlog import find_logs, read_application
from skewagg.tasktimes import makespan

VARIANTS = ("skewagg@64", "skewagg")


def executions(logs: str) -> Dict[Tuple[str, str, str], Tuple[int, float]]:
    """(scenario, data, variant) -> the last measured run's execution id and its makespan on
    64 slots (stages summed)."""
    runs: Dict[Tuple[str, str, str], Tuple[int, float]] = {}
    for name, files in find_logs([logs]):
        app = read_application(name, files)
        for execution in app.executions.values():
            words = (execution.description or "").split()
            if len(words) != 3:
                continue
            key = (words[0], words[1], words[2])
            if key in runs and runs[key][0] > execution.execution_id:
                continue
            stages = [app.last_attempt(s) for s in dict.fromkeys(execution.stage_ids)]
            runs[key] = (execution.execution_id,
                         sum(makespan(s.durations_ms, 64) for s in stages if s is not None))
    return runs


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", help="the directory bench.py --event-log wrote")
    parser.add_argument("--task-slots", type=int, default=64)
    args = parser.parse_args(argv)
    report = skewagg.advise(args.logs, task_slots=args.task_slots)
    runs = executions(args.logs)
    advised: Dict[Tuple[str, str], list] = {}
    for advice in report.stages:
        words = advice.description.split()
        key = (words[0], words[1], words[2]) if len(words) == 3 else None
        if key and key[2] == "vanilla" and runs[key][0] == advice.execution_id:
            advised.setdefault(key[:2], []).append(advice)
    print("| scenario | data | advisor names | rewrite | estimated ms | measured ms "
          "| error | vanilla ms (advisor / measured) |")
    print("|---|---|---|---|---|---|---|---|")
    failures = 0
    for scenario, data, _ in sorted(k for k in runs if k[2] == "vanilla"):
        rewritten = [a for a in advised.get((scenario, data), []) if a.rewrite]
        variant = next((v for v in VARIANTS if (scenario, data, v) in runs), None)
        vanilla_measured = runs[(scenario, data, "vanilla")][1]
        if rewritten:
            estimated = rewritten[0].query_estimated_ms
            logged = rewritten[0].query_makespan_ms
            names = "; ".join(sorted({a.operator for a in rewritten}))
            rewrites = "; ".join(sorted({a.rewrite or "" for a in rewritten}))
        else:
            estimated, logged, names, rewrites = None, None, "nothing", ""
        target = runs[(scenario, data, variant)][1] if variant else None
        error = ""
        if data == "uniform" and rewritten:
            error = "names a uniform run"
            failures += 1
        elif data == "skewed" and not rewritten:
            error = "names nothing"
            failures += 1
        elif rewritten and target:
            ratio = estimated / target - 1
            error = f"{ratio:+.0%}"
            failures += abs(ratio) > 0.25
        print(f"| {scenario} | {data} | {names} | {rewrites} | "
              f"{'' if estimated is None else round(estimated)} | "
              f"{'' if target is None else f'{round(target)} ({variant})'} | {error} | "
              f"{'' if logged is None else round(logged)} / {round(vanilla_measured)} |")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
