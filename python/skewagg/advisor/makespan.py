"""Per-stage task times of a query, and the makespan of those tasks on N slots.

The makespan is simulated: a stage's measured task durations are list-scheduled, in task index
order, onto N slots (each task starts on the slot that frees first), and a query's makespan is the
sum over its stages (a stage starts when the previous one ends). On a 2-core machine it shows what
the same tasks would take on a cluster of N cores, where one hot task, not the core count,
decides how long a stage takes.
"""

from __future__ import annotations

import heapq
import json
import statistics
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Sequence, Tuple


def makespan(durations_ms: Sequence[float], slots: int) -> float:
    """Milliseconds to run tasks of these durations, in order, on ``slots`` parallel slots."""
    if slots < 1:
        raise ValueError(f"slots must be at least 1, got {slots}")
    free: List[float] = [0.0] * min(slots, max(1, len(durations_ms)))
    for duration in durations_ms:
        start = heapq.heappop(free)
        heapq.heappush(free, start + duration)
    return max(free) if durations_ms else 0.0


def query_makespan(stages_ms: Iterable[Sequence[float]], slots: int) -> float:
    """Milliseconds to run stages of these task durations one after another on ``slots`` slots."""
    return sum(makespan(durations, slots) for durations in stages_ms)


@dataclass
class StageTimes:
    stage: int
    attempt: int
    name: str
    durations_ms: List[int] = field(default_factory=list)
    records: List[int] = field(default_factory=list)
    bytes: List[int] = field(default_factory=list)
    peak_execution_memory: List[int] = field(default_factory=list)
    disk_spilled: List[int] = field(default_factory=list)
    jvm_heap_peak: List[int] = field(default_factory=list)

    @property
    def max_ms(self) -> int:
        return max(self.durations_ms, default=0)

    @property
    def median_ms(self) -> float:
        return float(statistics.median(self.durations_ms)) if self.durations_ms else 0.0


@dataclass
class QueryTimes:
    stages: List[StageTimes]

    def makespan(self, slots: int) -> float:
        return query_makespan((s.durations_ms for s in self.stages), slots)

    @property
    def peak_execution_memory(self) -> int:
        """The largest execution memory (Spark-managed: sort, aggregation buffers) of one task."""
        return max((m for s in self.stages for m in s.peak_execution_memory), default=0)

    @property
    def disk_spilled(self) -> int:
        """Bytes all tasks spilled to disk."""
        return sum(m for s in self.stages for m in s.disk_spilled)

    @property
    def jvm_heap_peak(self) -> int:
        """The executor JVM's peak heap while any task ran (Spark's executor metrics)."""
        return max((m for s in self.stages for m in s.jvm_heap_peak), default=0)

    @property
    def hot_stage(self) -> StageTimes:
        """The stage that holds the longest task."""
        if not self.stages:
            raise ValueError("no stage was recorded")
        return max(self.stages, key=lambda s: s.max_ms)

    @staticmethod
    def from_json(text: str) -> "QueryTimes":
        return QueryTimes.from_entries(json.loads(text))

    @staticmethod
    def from_entries(entries: List[Dict[str, Any]]) -> "QueryTimes":
        """From stage entries as :meth:`from_json` reads them."""
        stages = []
        for entry in entries:
            tasks = entry["tasks"]
            stages.append(StageTimes(
                stage=entry["stage"], attempt=entry["attempt"], name=entry["name"],
                durations_ms=[t["durationMs"] for t in tasks],
                records=[t["records"] for t in tasks],
                peak_execution_memory=[t.get("peakExecutionMemory", 0) for t in tasks],
                disk_spilled=[t.get("diskSpilled", 0) for t in tasks],
                jvm_heap_peak=[t.get("jvmHeapPeak", 0) for t in tasks],
                bytes=[t.get("bytes", 0) for t in tasks],
            ))
        return QueryTimes(stages)

    @staticmethod
    def from_rows(rows: List[Dict[str, Any]]) -> "QueryTimes":
        """From the rows of ``skewagg_task_times(tag)`` (one per task, by stage)."""
        entries: Dict[Tuple[int, int], Dict[str, Any]] = {}
        for r in rows:
            entry = entries.setdefault((r["stage"], r["attempt"]), {
                "stage": r["stage"], "attempt": r["attempt"], "name": r["stage_name"],
                "tasks": []})
            entry["tasks"].append({
                "durationMs": r["duration_ms"], "records": r["records"], "bytes": r["bytes"],
                "peakExecutionMemory": r["peak_execution_memory"],
                "diskSpilled": r["disk_spilled"], "jvmHeapPeak": r["jvm_heap_peak"]})
        return QueryTimes.from_entries(list(entries.values()))
