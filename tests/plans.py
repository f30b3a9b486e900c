"""Executed plans as operators, read through skewagg's bridge (``PythonBridge.operators``): tests
assert on operator classes and the inputs each reads, not on the plan's text."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

from pyspark.sql import DataFrame, SparkSession

import skewagg
from skewagg._bridge import bridge

# Operators that pass their input's rows on unchanged: a plan's shape is read through them.
PASS_THROUGH = frozenset({
    "WholeStageCodegenExec", "InputAdapter", "ShuffleQueryStageExec", "AQEShuffleReadExec",
    "SkewAggLocalStageExec", "ReusedExchangeExec", "SortExec",
})

# skewagg's one-key-at-a-time aggregates: SingleKeyAggregate in the plan's text, both.
SINGLE_KEY_AGGREGATES = ("SingleKeyAggregateExec", "HotKeySplitAggregateExec")

# Spark's shuffle origins of a user's repartition(k), repartition(n, k) and DISTRIBUTE BY.
USER_REPARTITION = ("REPARTITION_BY_COL", "REPARTITION_BY_NUM")


def reported(df: DataFrame) -> Dict[str, str]:
    """``df``'s executed plan as JSON-ready strings (what apps in subprocesses report):
    ``Plan(**reported(df))`` reads it back."""
    jvm_bridge = bridge(df.sparkSession, instead="assert on skewagg.explain(df) instead")
    executed = df._jdf.queryExecution().executedPlan()
    return {
        "operators_json": str(jvm_bridge.operators(executed)),
        "text": str(executed.toString()),
    }


@dataclass(frozen=True)
class Operator:
    index: int
    name: str
    parent: int
    partial: Optional[bool] = None
    origin: Optional[str] = None
    skewJoin: Optional[bool] = None  # noqa: N815 (the bridge's JSON field)
    decision: Optional[str] = None
    metrics: Optional[Dict[str, int]] = None


class Plan:
    """The operators of one executed plan, top down (through adaptive plans, query stages and
    reused exchanges), with its text for assertion messages."""

    def __init__(self, operators_json: str, text: str) -> None:
        self.operators: List[Operator] = [
            Operator(index=i, **fields) for i, fields in enumerate(json.loads(operators_json))
        ]
        self.text = text

    @classmethod
    def of(cls, df: DataFrame) -> "Plan":
        """``df``'s executed plan (for adaptive queries, the final plan once run)."""
        return cls(**reported(df))

    def __repr__(self) -> str:
        return self.text

    def named(self, name: str) -> List[Operator]:
        return [o for o in self.operators if o.name == name]

    def has(self, *names: str) -> bool:
        """Any operator of one of the classes ``names``."""
        return any(o.name in names for o in self.operators)

    def has_prefix(self, prefix: str) -> bool:
        """Any operator whose class name starts with ``prefix`` (e.g. every ``SkewAgg`` one)."""
        return any(o.name.startswith(prefix) for o in self.operators)

    def decisions(self, name: str = "SkewAggLocalStageExec") -> List[str]:
        """What each skewagg operator of class ``name`` prints in the plan."""
        return [o.decision or "" for o in self.named(name)]

    def has_decision(self, prefix: str) -> bool:
        return any(d.startswith(prefix) for d in self.decisions())

    def inputs(self, operator: Operator) -> List[Operator]:
        return [o for o in self.operators if o.parent == operator.index]

    def reads(self, operator: Operator) -> List[Operator]:
        """The operators whose rows ``operator`` reads, through pass-through operators."""
        found: List[Operator] = []
        for child in self.inputs(operator):
            found += self.reads(child) if child.name in PASS_THROUGH else [child]
        return found

    def partial_below_exchange(self, origins: Sequence[str]) -> bool:
        """A partial aggregate feeding a shuffle of one of ``origins`` directly."""
        return any(
            o.origin in origins and any(r.partial for r in self.reads(o))
            for o in self.operators if o.origin is not None
        )

    def consumer(self, operator: Operator) -> Optional[Operator]:
        """The operator that uses ``operator``'s rows, above pass-through operators and the
        partial (merging) aggregates between an exchange and a join."""
        parent = operator.parent
        while parent >= 0:
            above = self.operators[parent]
            if above.name not in PASS_THROUGH and not above.partial:
                return above
            parent = above.parent
        return None

    def partial_below_join(self) -> bool:
        """A shuffle of partial aggregates feeding a join: local aggregation before the join."""
        for exchange in self.operators:
            if exchange.origin is None or not any(r.partial for r in self.reads(exchange)):
                continue
            consumer = self.consumer(exchange)
            if consumer is not None and consumer.skewJoin is not None:
                return True
        return False

    def skew_join(self) -> bool:
        """A shuffled join Spark's skew-join split read in splits."""
        return any(o.skewJoin for o in self.operators)


def report_variants(spark: SparkSession, query: str, runs: Dict[str, Dict[str, Any]],
                    split_operator: Optional[str], prefix: str = "") -> None:
    """Runs ``query`` with adaptive execution off then on, skewagg off then on in each, and
    records in ``runs`` under ``prefix + "skewagg=...,adaptive=..."`` each variant's rows (as
    strings, sorted, so NaN equals itself), its plan (``reported``) and the ``hotKeys`` and
    ``splits`` metrics of its ``split_operator`` ({} without one, or with None): what the test
    apps report."""
    for adaptive in (False, True):
        spark.conf.set("spark.sql.adaptive.enabled", str(adaptive).lower())
        for on in (False, True):
            (skewagg.enable if on else skewagg.disable)(spark)
            df = spark.sql(query)
            name = f"{prefix}skewagg={on},adaptive={adaptive}"
            runs["rows"][name] = sorted(repr(tuple(r)) for r in df.collect())
            runs["plans"][name] = reported(df)
            splits = Plan(**runs["plans"][name]).named(split_operator) if split_operator else []
            runs["splits"][name] = next(
                ({m: (op.metrics or {})[m] for m in ("hotKeys", "splits")} for op in splits), {})
