"""Which of my jobs would skewagg help? ``skewagg.advise(paths)`` reads Spark event logs, without a
JVM or a Spark session, and says, for every SQL execution, which stages a hot partition held up,
the operator that stage ran, what skewagg would do there, and what that would save.

For every stage of every SQL execution it applies skewagg's skew test (the rules' own, from
:mod:`skewagg.advisor.skew_rule`) to the bytes each task read from the stage's input shuffles,
as the rules test a shuffle's partition sizes: a task is skewed when it read more than
``spark.skewagg.skew.factor`` times an even share of the stage's bytes on the task slots
(``task_slots``, else ``spark.skewagg.skew.taskSlots`` of the application's settings, else the
application's executor cores). Stages that are skewed apart from
the ``spark.skewagg.skew.minPartitionSize`` floor are reported too, with the floor as the reason
skewagg would leave them alone.

The operator is found through the plan (:mod:`~skewagg.advisor.stage_plans`); what skewagg would
do there is :func:`~skewagg.advisor.decision.decide`. Makespans are estimates from the measured
task times (:mod:`~skewagg.advisor.estimates`): a stage's tasks list-scheduled in task order onto
the slots (:func:`skewagg.advisor.makespan.makespan`), every task costing at least the stage's
shortest; with skewagg, each skewed task's pieces taking that plus an even share of the rest of its
time (time in proportion to bytes read; a bucketed scan's and a DISTINCT's pieces in stages of
their own), and, where skewagg aggregates before the shuffle, each task's time beyond the shortest
scaled by the rows its operators would read after that aggregate (an estimate; after a join, the
merge after its shuffle where skewagg would keep it) over the rows they read, or the skewed task
taking the stage's median time where the log does not count the groups; the map tasks'
aggregation and the partial results' exchanges are not counted. A query's makespan is the sum of
its stages'.

Below an aggregate grouping by more than the shuffle's keys (a DISTINCT's first step) the split
rules test the shuffle in rows (``GroupsBeyondShuffleKeys``), and so does this module
(:func:`skewagg.advisor.skew_rule.measure_rows`), on the rows skewagg's deduplication before the
shuffle would leave where it plans one.
"""

from __future__ import annotations

from dataclasses import replace
from typing import List, Mapping, Optional, Sequence, Tuple, Union

from skewagg.advisor.advice_report import AdviceReport, StageAdvice
from skewagg.advisor.decision import Decision, decide
from skewagg.advisor.estimates import estimate_makespan, measure_shuffle
from skewagg.advisor.eventlog import (
    Application,
    EventLogError,
    Execution,
    PlanNode,
    Stage,
    find_logs,
    read_application,
)
from skewagg.advisor.makespan import makespan, query_makespan
from skewagg.advisor.skew_rule import (
    SkewSettings,
    default_settings,
    find_skewed,
)
from skewagg.advisor.stage_plans import (
    READ_METRICS,
    RECORDS_READ,
    bucket_bytes,
    rows_into_partial,
    stage_plan,
    task_reads,
    writer_stage,
)
from skewagg.errors import SkewAggError


def _advise_app(app: Application, settings: SkewSettings, slots: int) -> List[StageAdvice]:
    out: List[StageAdvice] = []
    for execution in sorted(app.executions.values(), key=lambda e: e.execution_id):
        stages = app.stages_of(execution)
        advised: List[Tuple[StageAdvice, Decision]] = []
        for stage in stages:
            advised_stage = _advise_stage(app, execution, stage, settings, slots)
            if advised_stage:
                advised.append(advised_stage)
        total = query_makespan((st.durations_ms for st in stages), slots)
        saved = sum(a.saved_ms for a, _ in advised)
        for advice, _ in advised:
            advice.query_makespan_ms = total
            advice.query_estimated_ms = total - saved
            out.append(advice)
    return out



def _advise_stage(app: Application, execution: Execution, stage: Stage, settings: SkewSettings,
                  slots: int) -> Optional[Tuple[StageAdvice, Decision]]:
    plan = stage_plan(execution, stage)
    tasks = sorted(stage.tasks, key=lambda t: t.index)
    # (sizes, rows, exchange) per input, as the rules test each shuffle
    candidates: List[Tuple[List[int], List[int], Optional[PlanNode]]] = []
    for read in plan.inputs:
        sizes = task_reads(stage, read, READ_METRICS)
        if any(sizes):
            candidates.append((sizes, task_reads(stage, read, (RECORDS_READ,)), read))
    if not candidates:
        if any(t.shuffle_bytes for t in tasks):
            candidates.append(([t.shuffle_bytes for t in tasks],
                               [t.shuffle_records for t in tasks], None))
        elif plan.kind.endswith("-bucketed"):
            records = [t.input_records for t in tasks]
            candidates.append((bucket_bytes(execution, plan, records)
                               or [t.input_bytes for t in tasks], records, None))
    # A window's stage of one task (a window without PARTITION BY: its one key is the whole
    # table, which SplitSkewedWindow cuts by order) is tested as any stage, and said to be so.
    one_task = plan.kind == "window" and len(tasks) == 1
    if not candidates or (len(tasks) < 2 and not one_task):
        return None
    sizes, rows, exchange = max(candidates, key=lambda c: max(c[0]))
    bare = replace(find_skewed(sizes, settings, slots, floor=0), whole_stage=one_task)
    if not bare.skewed:
        return None
    found = replace(find_skewed(sizes, settings, slots), whole_stage=one_task)
    writer = writer_stage(app, execution, exchange) if exchange is not None else None
    map_tasks = len(writer.tasks) if writer else 0
    if plan.kind == "holistic" and writer is not None and exchange is not None and any(sizes):
        # Spark's partial aggregate sent one buffer per key and map task: the rows of a partition
        # are estimated from its share of the bytes and the rows that aggregate read.
        into = rows_into_partial(writer, exchange)
        rows = [int(into * size / sum(sizes)) for size in sizes]
    where = "the join's input shuffles below" if plan.join is not None else (
        "the window's shuffle" if plan.kind == "window" else "the shuffle below")
    measures = measure_shuffle(app, execution, stage, plan, sizes, rows, exchange, writer, settings,
                         slots)
    decision = decide(plan, sizes, rows, found, bare, settings, map_tasks or 1 << 30, where,
                       measures)
    durations = [t.duration_ms for t in tasks]
    before = makespan(durations, slots)
    # (One task: the shortest map task of its shuffle tells what any task costs.)
    elsewhere = (float(min(t.duration_ms for t in writer.tasks))
                 if len(tasks) == 1 and writer is not None and writer.tasks else None)
    after = estimate_makespan(durations, decision, slots, elsewhere)
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
