"""Which plan nodes ran in a stage of an event log, and what the log measured of them.

The SQL metrics of a plan node (``sparkPlanInfo``, at the execution's start and at each adaptive
update) are accumulators, and the accumulators a stage's tasks updated name the nodes that ran in
it: :func:`stage_plan` finds the aggregate, window or join a stage is about, the shuffles it read
and what sits between them. The rest reads plan nodes' texts (functions, keys, frames) and the
metrics their tasks updated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Set, Tuple

from skewagg.advisor.eventlog import Application, Execution, PlanNode, Stage

AGGREGATES = {"HashAggregate", "SortAggregate", "ObjectHashAggregate"}
JOINS = {"SortMergeJoin", "ShuffledHashJoin"}
BOUNDARIES = {"Exchange", "ShuffleQueryStage", "BroadcastQueryStage", "ReusedExchange",
              "BroadcastExchange", "TableCacheQueryStage"}
HOLISTIC = {"percentile", "percentile_disc", "percentile_cont", "median", "mode"}
SPLIT_HOLISTIC = {"percentile", "percentile_disc", "percentile_cont", "median"}
WINDOW_FUNCTIONS = {"sum", "count", "avg", "min", "max", "first", "last", "first_value",
                    "last_value", "nth_value", "row_number", "rank", "dense_rank",
                    "percent_rank", "cume_dist", "ntile", "lag", "lead"}
READ_METRICS = ("remote bytes read", "local bytes read")
RECORDS_READ = "records read"


def aggregate_functions(desc: str) -> List[str]:
    """The aggregate functions of an aggregate node's text, e.g. ``sum(v#2L)``."""
    match = re.search(r"functions=\[(.*)\]", desc)
    return split_top_level(match.group(1)) if match else []


def grouping_keys(desc: str) -> List[str]:
    match = re.search(r"\(keys?=\[([^\]]*)\]", desc)
    return split_top_level(match.group(1)) if match else []


def split_top_level(text: str) -> List[str]:
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


def function_name(function: str) -> str:
    match = re.match(r"\s*(\w+)\(", function)
    return match.group(1).lower() if match else function


def attribute_ids(text: str) -> set:
    return set(re.findall(r"#(\d+)", text))


def is_partial(agg: PlanNode) -> bool:
    functions = aggregate_functions(agg.desc)
    return bool(functions) and all(
        function_name(f).startswith(("partial_", "merge_")) for f in functions)


def nodes_below(node: PlanNode) -> Iterable[PlanNode]:
    """The nodes below ``node`` in its stage (not crossing shuffles and query stages)."""
    for child in node.children:
        yield child
        if child.name not in BOUNDARIES:
            yield from nodes_below(child)


def exchange_under(node: PlanNode) -> Optional[PlanNode]:
    """The Exchange a boundary node reads (itself, or under a query stage / reuse)."""
    for candidate in node.walk():
        if candidate.name == "Exchange":
            return candidate
    return None


@dataclass
class StagePlan:
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
        keys = grouping_keys(self.first.desc) if self.first else []
        return bool(self.shuffle_keys) and any(
            not attribute_ids(k) <= self.shuffle_keys for k in keys)

    @property
    def distinct(self) -> bool:
        return self.top is not None and any(
            "distinct" in f for f in aggregate_functions(self.top.desc))

    @property
    def expands(self) -> bool:
        """Spark expands the rows per DISTINCT group (several DISTINCTs, or one with a FILTER)."""
        return self.top is not None and any(n.name == "Expand" for n in nodes_below(self.top))


def first_aggregate(top: PlanNode, bottom: PlanNode) -> PlanNode:
    """The lowest aggregate between ``bottom`` (a join, or the boundary of the shuffle read) and
    ``top``: the step that reads the join's or the shuffle's rows."""
    node = bottom.parent
    while node is not None and node is not top and node.name not in AGGREGATES:
        node = node.parent
    return node if node is not None else top


def hash_keys(exchange: PlanNode) -> Set[str]:
    """The attribute ids an Exchange hashes on (``hashpartitioning(k#1L, 16)``)."""
    match = re.search(r"hashpartitioning\((.*?),\s*\d+\)", exchange.desc)
    return attribute_ids(match.group(1)) if match else set()


def stage_plan(execution: Execution, stage: Stage) -> StagePlan:
    by_acc: Dict[int, PlanNode] = {}
    for plan in execution.plans:
        for node in plan.walk():
            for acc in node.metrics:
                by_acc[acc] = node
    nodes = {id(by_acc[a]): by_acc[a] for a in stage.accumulators if a in by_acc}
    ran = list(nodes.values())
    inputs = [n for n in ran if n.name == "Exchange" and any(
        a in stage.accumulators and name in READ_METRICS + (RECORDS_READ,)
        for a, name in n.metrics.items())]
    operators = [n for n in ran if n.name not in BOUNDARIES]
    windows = [n for n in operators if n.name == "Window"]
    aggregates = [n for n in operators if n.name in AGGREGATES and not is_partial(n)]
    joins = [n for n in operators if n.name in JOINS]
    if windows:
        top = min(windows, key=lambda n: n.depth)
        return StagePlan(top, "window", inputs, kind="window")
    if aggregates:
        top = min(aggregates, key=lambda n: n.depth)
        below = list(nodes_below(top))
        join = next((n for n in below if n.name in JOINS), None)
        holistic = any(function_name(f) in HOLISTIC for f in aggregate_functions(top.desc))
        kind = "holistic" if holistic else "aggregate"
        if join is not None:
            keys = set().union(*(hash_keys(e) for e in inputs)) if inputs else set()
            return StagePlan(top, ("holistic aggregate" if holistic else "aggregate") +
                              " over a join", inputs, join, kind + "-join",
                              first_aggregate(top, join), keys)
        boundaries = [(n, exchange_under(n)) for n in below if n.name in BOUNDARIES]
        user = next(((n, e) for n, e in boundaries if e and "REPARTITION_BY" in e.desc), None)
        if user is not None:
            return StagePlan(top, ("holistic aggregate" if holistic else "aggregate") +
                              " over a repartition", inputs, kind=kind + "-repartition",
                              first=first_aggregate(top, user[0]),
                              shuffle_keys=hash_keys(user[1]))
        if any(n.name.startswith("Scan") and ("Bucketed: true" in n.desc or
                                              n.metadata.get("Bucketed") == "true")
               for n in below):
            return StagePlan(top, "aggregate over a bucketed scan", inputs,
                              kind=kind + "-bucketed")
        return StagePlan(top, "holistic aggregate" if holistic else "aggregate", inputs,
                          kind=kind)
    if joins:
        return StagePlan(min(joins, key=lambda n: n.depth), "join", inputs, kind="join")
    return StagePlan(None, "scan or exchange", inputs, kind="other")


def task_reads(stage: Stage, exchange: PlanNode, names: Tuple[str, ...]) -> List[int]:
    accs = [a for a, n in exchange.metrics.items() if n in names]
    tasks = sorted(stage.tasks, key=lambda t: t.index)
    return [sum(t.updates.get(a, 0) for a in accs) for t in tasks]


def reads_one_side(agg: PlanNode, join: PlanNode) -> bool:
    """Whether the aggregate's functions read only one side of the join (by attribute ids)."""
    keys = set().union(*(attribute_ids(k) for k in grouping_keys(agg.desc))) \
        if grouping_keys(agg.desc) else set()
    needed = set().union(*(attribute_ids(f) for f in aggregate_functions(agg.desc))) - keys \
        if aggregate_functions(agg.desc) else set()
    defined: Dict[str, set] = {}  # id -> ids of the expression a Project between computes
    for node in nodes_below(agg):
        if node is join:
            break
        if node.name == "Project":
            for item in split_top_level(node.desc[len("Project "):].strip("[] ")):
                match = re.search(r"AS \w+#(\d+)$", item)
                if match:
                    defined[match.group(1)] = attribute_ids(item[:match.start()])
    resolved = set()
    for i in needed:
        resolved |= defined.get(i, {i})
    sides = [set().union(*(attribute_ids(n.desc) for n in side.walk())) for side in join.children]
    if len(sides) != 2 or not resolved:
        return bool(sides) and not resolved  # count(*): reads no side
    return resolved <= sides[0] or resolved <= sides[1]


def window_refusal(desc: str) -> Optional[str]:
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
        function = function_name(desc[start:match.start()])
        if function not in WINDOW_FUNCTIONS:
            return f"the window function {function} is not split (docs/window.md)"
    for lower, upper in re.findall(r"specifiedwindowframe\(\w+, ([^,]+), ([^)]+\)?)\)", desc):
        if not lower.startswith("unboundedpreceding") or not upper.startswith(
                ("unboundedfollowing", "currentrow")):
            return (f"its frame ({lower.strip()}, {upper.strip()}) is neither the whole "
                    f"partition nor a running frame (docs/window.md)")
    return None



def writer_stage(app: Application, execution: Execution, exchange: PlanNode) -> Optional[Stage]:
    """The stage that wrote ``exchange`` (its map tasks)."""
    writes = {a for a, n in exchange.metrics.items() if n.startswith("shuffle ")}
    for sid in execution.stage_ids:
        stage = app.last_attempt(sid)
        if stage and writes & stage.accumulators:
            return stage
    return None


def rows_into_partial(writer: Stage, exchange: PlanNode) -> int:
    """The rows Spark's partial aggregate below ``exchange`` read in its map stage: the "number
    of output rows" of the first node below it that counts them, over the writer's tasks."""
    partial = next((n for n in nodes_below(exchange) if n.name in AGGREGATES), None)
    for node in nodes_below(partial) if partial else []:
        accs = [a for a, name in node.metrics.items() if name == "number of output rows"]
        if accs:
            return sum(t.updates.get(a, 0) for t in writer.tasks for a in accs)
    return sum(t.input_records + t.shuffle_records for t in writer.tasks)



def output_rows(stage: Stage, node: PlanNode) -> List[int]:
    """The rows ``node`` output in each task of ``stage`` (index order); zeros where the log does
    not count them."""
    accs = [a for a, name in node.metrics.items() if name == "number of output rows"]
    return [sum(t.updates.get(a, 0) for a in accs)
            for t in sorted(stage.tasks, key=lambda t: t.index)]


def written(writer: Optional[Stage], exchange: Optional[PlanNode], name: str) -> int:
    """The sum over the map tasks of ``writer`` of the exchange's SQL metric ``name``."""
    if writer is None or exchange is None:
        return 0
    accs = [a for a, n in exchange.metrics.items() if n == name]
    return sum(t.updates.get(a, 0) for t in writer.tasks for a in accs)



def bucket_bytes(execution: Execution, plan: StagePlan, records: List[int]) -> List[int]:
    """The bytes of the buckets each task read, as the rules weigh buckets (their files' sizes):
    the bucketed scan's "size of files read" (a metric the driver sets) shared in proportion to
    the records each task read. The tasks' own "bytes read" can miss most of a Parquet read.
    Empty where the log has no such size."""
    scans = [n for n in nodes_below(plan.top) if n.name.startswith("Scan")] if plan.top else []
    accs = [a for n in scans for a, name in n.metrics.items() if name == "size of files read"]
    size = sum(execution.driver_metrics.get(a, 0) for a in accs)
    total = sum(records)
    if size <= 0 or total <= 0:
        return []
    return [round(size * r / total) for r in records]


