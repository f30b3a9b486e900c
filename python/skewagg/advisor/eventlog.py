"""Reading Spark event logs (the files the history server reads) without a JVM.

An event log is one JSON object a line. This module finds the logs under the paths it is given
(files; directories of logs; rolling logs, directories ``eventlog_v2_<app>`` of ``events_<n>_...``
files), decompresses them by their file name's codec (Spark's ``lz4``, ``lzf``, ``snappy`` and
``zstd`` streams: zstandard, for Spark 4's default, is a dependency of skewagg;
``pip install 'skewagg[eventlogs]'`` brings lz4 and snappy; lzf is decoded here), and keeps what
the advisor needs: the application's settings and task slots, every SQL execution's physical
plans (``sparkPlanInfo`` of its start and of each adaptive update) and the stages of its jobs
with every task's time, bytes read and SQL metric updates.
"""

from __future__ import annotations

import io
import json
import os
import re
import struct
from dataclasses import dataclass, field
from typing import IO, Any, Dict, Iterator, List, Optional, Set, Tuple

from skewagg.errors import SkewAggError

CODECS = ("lz4", "lzf", "snappy", "zstd")
ROLLING_PREFIX = "eventlog_v2_"
EXECUTION_ID = "spark.sql.execution.id"


class EventLogError(SkewAggError):
    """An event log could not be read: the message names the file and the line."""

    def __init__(self, path: str, line: Optional[int], reason: str) -> None:
        where = f"{path}, line {line}" if line is not None else path
        super().__init__(f"{where}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


# ---------------------------------------------------------------------------------------------
# Finding logs and decompressing them


def codec_of(name: str) -> Optional[str]:
    """The compression codec of an event log file, from its name (``app-1.zstd.inprogress``)."""
    base = name[:-len(".inprogress")] if name.endswith(".inprogress") else name
    ext = base.rsplit(".", 1)[-1] if "." in base else ""
    return ext if ext in CODECS else None


def _is_log_file(name: str) -> bool:
    return not (name.startswith(".") or name.endswith(".crc") or name.startswith("appstatus_"))


def _rolling_files(directory: str) -> List[str]:
    """The ``events_<n>_...`` files of a rolling log, in order (compacted files first)."""
    found = []
    for name in os.listdir(directory):
        match = re.match(r"events_(\d+)_", name)
        if match and _is_log_file(name):
            found.append((int(match.group(1)), name))
    return [os.path.join(directory, n) for _, n in sorted(found)]


def find_logs(paths: List[str]) -> List[Tuple[str, List[str]]]:
    """(name, files) of every event log under ``paths``: a plain log is one file, a rolling log
    the files of its directory. A directory that is not a rolling log is searched one level down.
    Raises :class:`~skewagg.errors.SkewAggError` for a path that does not exist."""
    logs: List[Tuple[str, List[str]]] = []
    for path in paths:
        if not os.path.exists(path):
            raise SkewAggError(f"no such file or directory: {path}")
        if os.path.isfile(path):
            logs.append((path, [path]))
        elif os.path.basename(os.path.normpath(path)).startswith(ROLLING_PREFIX):
            logs.append((path, _rolling_files(path)))
        else:
            for name in sorted(os.listdir(path)):
                full = os.path.join(path, name)
                if name.startswith(ROLLING_PREFIX) and os.path.isdir(full):
                    logs.append((full, _rolling_files(full)))
                elif os.path.isfile(full) and _is_log_file(name):
                    logs.append((full, [full]))
    return logs


def _missing(codec: str, package: str) -> SkewAggError:
    return SkewAggError(f"reading {codec}-compressed event logs needs the Python package "
                        f"{package}: pip install 'skewagg[eventlogs]' (or pip install {package})")


def _decompressed(path: str, raw: IO[bytes], codec: Optional[str]) -> Iterator[bytes]:
    """The bytes of ``raw``, decompressed as Spark's ``codec`` stream, in pieces."""
    if codec is None:
        while True:
            chunk = raw.read(1 << 20)
            if not chunk:
                return
            yield chunk
    elif codec == "zstd":
        try:
            import zstandard
        except ImportError:
            raise _missing("zstd", "zstandard") from None
        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        while True:
            try:
                chunk = reader.read(1 << 20)
            except zstandard.ZstdError as exc:
                raise _Truncated(f"zstd: {exc}") from None
            if not chunk:
                return
            yield chunk
    elif codec == "lz4":
        yield from _lz4_blocks(raw)
    elif codec == "snappy":
        yield from _snappy_blocks(raw)
    elif codec == "lzf":
        yield from _lzf_chunks(raw)
    else:  # pragma: no cover - codec_of returns only CODECS
        raise SkewAggError(f"{path}: unknown codec {codec}")


class _Truncated(Exception):
    """The compressed stream ends inside a block, or a block does not decompress."""


def _read_exact(raw: IO[bytes], n: int, what: str) -> bytes:
    data = raw.read(n)
    if len(data) != n:
        raise _Truncated(f"the file ends inside {what}")
    return data


def _lz4_blocks(raw: IO[bytes]) -> Iterator[bytes]:
    """lz4-java's ``LZ4BlockOutputStream`` (Spark's lz4 codec): blocks of a 21-byte header
    (``LZ4Block``, token, compressed and original lengths, checksum) and their data."""
    try:
        import lz4.block
    except ImportError:
        raise _missing("lz4", "lz4") from None
    while True:
        magic = raw.read(8)
        if not magic:
            return
        if magic != b"LZ4Block":
            raise _Truncated("not an lz4 block stream (no LZ4Block header)")
        token, compressed, original, _ = struct.unpack("<BiiI", _read_exact(raw, 13, "a header"))
        data = _read_exact(raw, compressed, "an lz4 block")
        if original == 0:  # the end mark; Spark's streams may be concatenated
            continue
        if token & 0xF0 == 0x10:
            yield data
        else:
            try:
                yield lz4.block.decompress(data, uncompressed_size=original)
            except Exception as exc:  # lz4.block.LZ4BlockError
                raise _Truncated(f"lz4: {exc}") from None


_SNAPPY_MAGIC = b"\x82SNAPPY\x00"


def _snappy_blocks(raw: IO[bytes]) -> Iterator[bytes]:
    """snappy-java's ``SnappyOutputStream`` (Spark's snappy codec): a 16-byte header, then
    blocks of a 4-byte big-endian length and raw snappy data."""
    try:
        import snappy
    except ImportError:
        raise _missing("snappy", "python-snappy") from None
    header = raw.read(16)
    if not header:
        return
    if not header.startswith(_SNAPPY_MAGIC):
        raise _Truncated("not a snappy-java stream (no SNAPPY header)")
    while True:
        size = raw.read(4)
        if not size:
            return
        if len(size) < 4:
            raise _Truncated("the file ends inside a block length")
        data = _read_exact(raw, struct.unpack(">i", size)[0], "a snappy block")
        if data.startswith(_SNAPPY_MAGIC):  # a concatenated stream's header
            continue
        try:
            yield snappy.decompress(data)
        except Exception as exc:  # snappy.UncompressError
            raise _Truncated(f"snappy: {exc}") from None


def _lzf_chunks(raw: IO[bytes]) -> Iterator[bytes]:
    """compress-lzf's ``LZFOutputStream`` (Spark's lzf codec): chunks ``ZV`` + type 0 (stored:
    2-byte length, data) or 1 (2-byte compressed and original lengths, LZF data)."""
    while True:
        head = raw.read(3)
        if not head:
            return
        if len(head) < 3 or head[:2] != b"ZV":
            raise _Truncated("not an lzf chunk (no ZV header)")
        if head[2] == 0:
            (length,) = struct.unpack(">H", _read_exact(raw, 2, "a chunk header"))
            yield _read_exact(raw, length, "an lzf chunk")
        elif head[2] == 1:
            compressed, original = struct.unpack(">HH", _read_exact(raw, 4, "a chunk header"))
            yield lzf_decompress(_read_exact(raw, compressed, "an lzf chunk"), original)
        else:
            raise _Truncated(f"unknown lzf chunk type {head[2]}")


def lzf_decompress(data: bytes, size: int) -> bytes:
    """One LZF block (liblzf's format, which compress-lzf writes) of ``size`` bytes."""
    out = bytearray()
    i, n = 0, len(data)
    try:
        while i < n:
            ctrl = data[i]
            i += 1
            if ctrl < 32:  # a literal run of ctrl + 1 bytes
                out += data[i:i + ctrl + 1]
                i += ctrl + 1
                continue
            length = ctrl >> 5
            if length == 7:
                length += data[i]
                i += 1
            ref = len(out) - ((ctrl & 0x1F) << 8) - data[i] - 1
            i += 1
            length += 2
            if ref < 0:
                raise _Truncated("lzf: a back reference before the start of the block")
            if ref + length <= len(out):
                out += out[ref:ref + length]
            else:  # overlapping: copy byte by byte
                for k in range(length):
                    out.append(out[ref + k])
    except IndexError:
        raise _Truncated("lzf: a block ends inside a sequence") from None
    if len(out) != size:
        raise _Truncated(f"lzf: a block of {len(out)} bytes where its header says {size}")
    return bytes(out)


def read_lines(files: List[str]) -> Iterator[Tuple[str, int, str]]:
    """(file, line number, text) of every line of ``files``, decompressed. A stream that ends
    inside a compressed block raises :class:`EventLogError` naming the line after the last
    complete one."""
    for path in files:
        codec = codec_of(os.path.basename(path))
        number = 0
        pending = b""
        try:
            with open(path, "rb") as raw:
                for chunk in _decompressed(path, io.BufferedReader(raw), codec):
                    pending += chunk
                    *complete, pending = pending.split(b"\n")
                    for line in complete:
                        number += 1
                        yield path, number, line.decode("utf-8", errors="replace")
        except _Truncated as exc:
            raise EventLogError(path, number + 1, f"cannot decompress ({codec}): {exc}; the "
                                "file is truncated or corrupt") from None
        except OSError as exc:
            raise EventLogError(path, None, f"cannot read: {exc}") from None
        if pending.strip():
            number += 1
            yield path, number, pending.decode("utf-8", errors="replace")


# ---------------------------------------------------------------------------------------------
# What a log holds


@dataclass
class PlanNode:
    """A node of a ``sparkPlanInfo`` tree."""

    name: str
    desc: str
    metrics: Dict[int, str]  # accumulator id -> metric name
    metadata: Dict[str, str]
    children: List["PlanNode"] = field(default_factory=list)
    parent: Optional["PlanNode"] = field(default=None, repr=False)
    depth: int = 0

    @staticmethod
    def of(info: Dict[str, Any], parent: Optional["PlanNode"] = None) -> "PlanNode":
        node = PlanNode(str(info.get("nodeName", "")), str(info.get("simpleString", "")),
                        {int(m["accumulatorId"]): str(m.get("name", ""))
                         for m in info.get("metrics", []) if "accumulatorId" in m},
                        {str(k): str(v) for k, v in (info.get("metadata") or {}).items()},
                        parent=parent, depth=parent.depth + 1 if parent else 0)
        node.children = [PlanNode.of(c, node) for c in info.get("children", [])]
        return node

    def walk(self) -> Iterator["PlanNode"]:
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass
class Task:
    index: int
    duration_ms: int
    shuffle_bytes: int
    shuffle_records: int
    input_bytes: int
    input_records: int
    updates: Dict[int, int]  # SQL metric accumulator id -> this task's update


@dataclass
class Stage:
    stage_id: int
    attempt: int
    name: str
    num_tasks: int
    tasks: List[Task] = field(default_factory=list)
    accumulators: Set[int] = field(default_factory=set)
    completed: bool = False

    @property
    def durations_ms(self) -> List[int]:
        return [t.duration_ms for t in sorted(self.tasks, key=lambda t: t.index)]


@dataclass
class Execution:
    execution_id: int
    description: str
    plans: List[PlanNode] = field(default_factory=list)  # the start's, then adaptive updates
    stage_ids: List[int] = field(default_factory=list)
    # SQL metrics the driver set (a scan's files and their size): accumulator id -> last value
    driver_metrics: Dict[int, int] = field(default_factory=dict)

    @property
    def final_plan(self) -> Optional[PlanNode]:
        return self.plans[-1] if self.plans else None


@dataclass
class Application:
    """One application's event log."""

    path: str
    app_id: str = ""
    name: str = ""
    spark_version: str = ""
    properties: Dict[str, str] = field(default_factory=dict)
    executor_cores: Dict[str, int] = field(default_factory=dict)
    max_cores: int = 0
    executions: Dict[int, Execution] = field(default_factory=dict)
    stages: Dict[Tuple[int, int], Stage] = field(default_factory=dict)
    lines: int = 0

    @property
    def task_slots(self) -> int:
        """Task slots: the most executor cores alive at once over ``spark.task.cpus``."""
        cpus = float(self.properties.get("spark.task.cpus", "1") or 1)
        return max(1, int(self.max_cores / max(cpus, 1e-3)))

    def last_attempt(self, stage_id: int) -> Optional[Stage]:
        attempts = [s for (sid, _), s in self.stages.items() if sid == stage_id and s.tasks]
        return max(attempts, key=lambda s: s.attempt) if attempts else None

    def stages_of(self, execution: Execution) -> List[Stage]:
        """The last attempt of each stage ``execution`` ran, in the order its jobs named them."""
        attempts = (self.last_attempt(sid) for sid in dict.fromkeys(execution.stage_ids))
        return [stage for stage in attempts if stage is not None]


_SQL_START = "SparkListenerSQLExecutionStart"
_SQL_UPDATE = "SparkListenerSQLAdaptiveExecutionUpdate"
_DRIVER_ACCUMS = "SparkListenerDriverAccumUpdates"


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _task(event: Dict[str, Any]) -> Task:
    info = event.get("Task Info") or {}
    metrics = event.get("Task Metrics") or {}
    shuffle = metrics.get("Shuffle Read Metrics") or {}
    read = metrics.get("Input Metrics") or {}
    updates = {}
    for acc in info.get("Accumulables", []):
        if acc.get("Metadata") == "sql" or not str(acc.get("Name", "")).startswith("internal."):
            updates[_int(acc.get("ID"))] = _int(acc.get("Update"))
    return Task(
        index=_int(info.get("Index")),
        duration_ms=max(0, _int(info.get("Finish Time")) - _int(info.get("Launch Time"))),
        shuffle_bytes=(_int(shuffle.get("Remote Bytes Read")) +
                       _int(shuffle.get("Local Bytes Read"))),
        shuffle_records=_int(shuffle.get("Total Records Read")),
        input_bytes=_int(read.get("Bytes Read")), input_records=_int(read.get("Records Read")),
        updates=updates)


def read_application(name: str, files: List[str]) -> Application:
    """The application of one event log (``files``: one, or a rolling log's). Raises
    :class:`EventLogError` naming the file and line of an event that is not JSON."""
    app = Application(name)
    alive: Dict[str, int] = {}
    for path, number, text in read_lines(files):
        app.lines += 1
        if not text.strip():
            continue
        try:
            event = json.loads(text)
        except ValueError as exc:
            raise EventLogError(path, number, f"not a JSON event ({exc}); the file is truncated "
                                "or corrupt") from None
        if not isinstance(event, dict):
            raise EventLogError(path, number, "not a Spark listener event (a JSON object)")
        kind = str(event.get("Event", "")).rsplit(".", 1)[-1]
        _apply(app, alive, kind, event)
    if not app.app_id and not app.executions and not app.stages:
        raise EventLogError(files[0] if files else name, None,
                            "no Spark events: not an event log (no SparkListenerApplicationStart)")
    return app


def _apply(app: Application, alive: Dict[str, int], kind: str, event: Dict[str, Any]) -> None:
    if kind == "SparkListenerLogStart":
        app.spark_version = str(event.get("Spark Version", ""))
    elif kind == "SparkListenerApplicationStart":
        app.app_id = str(event.get("App ID", ""))
        app.name = str(event.get("App Name", ""))
    elif kind == "SparkListenerEnvironmentUpdate":
        app.properties.update({str(k): str(v) for k, v in
                               (event.get("Spark Properties") or {}).items()})
        if isinstance(event.get("Spark Properties"), list):  # very old logs: [[key, value]]
            app.properties.update({str(k): str(v) for k, v in event["Spark Properties"]})
    elif kind == "SparkListenerExecutorAdded":
        cores = _int((event.get("Executor Info") or {}).get("Total Cores"))
        alive[str(event.get("Executor ID"))] = cores
        app.executor_cores[str(event.get("Executor ID"))] = cores
        app.max_cores = max(app.max_cores, sum(alive.values()))
    elif kind == "SparkListenerExecutorRemoved":
        alive.pop(str(event.get("Executor ID")), None)
    elif kind == _SQL_START:
        eid = _int(event.get("executionId"))
        execution = app.executions.setdefault(eid, Execution(eid, ""))
        execution.description = str(event.get("description", ""))
        if event.get("sparkPlanInfo"):
            execution.plans.insert(0, PlanNode.of(event["sparkPlanInfo"]))
    elif kind == _SQL_UPDATE:
        eid = _int(event.get("executionId"))
        if event.get("sparkPlanInfo"):
            app.executions.setdefault(eid, Execution(eid, "")).plans.append(
                PlanNode.of(event["sparkPlanInfo"]))
    elif kind == _DRIVER_ACCUMS:
        eid = _int(event.get("executionId"))
        execution = app.executions.setdefault(eid, Execution(eid, ""))
        for update in event.get("accumUpdates") or []:
            if isinstance(update, list) and len(update) == 2:
                execution.driver_metrics[_int(update[0])] = _int(update[1])
    elif kind == "SparkListenerJobStart":
        tagged = (event.get("Properties") or {}).get(EXECUTION_ID)
        if tagged is not None and str(tagged).lstrip("-").isdigit():
            execution = app.executions.setdefault(int(tagged), Execution(int(tagged), ""))
            execution.stage_ids += [int(s) for s in event.get("Stage IDs", [])]
    elif kind in ("SparkListenerStageSubmitted", "SparkListenerStageCompleted"):
        info = event.get("Stage Info") or {}
        key = (_int(info.get("Stage ID")), _int(info.get("Stage Attempt ID")))
        stage = app.stages.setdefault(key, Stage(key[0], key[1], str(info.get("Stage Name", "")),
                                                 _int(info.get("Number of Tasks"))))
        stage.accumulators |= {_int(a.get("ID")) for a in info.get("Accumulables", [])}
        if kind == "SparkListenerStageCompleted":
            stage.completed = True
    elif kind == "SparkListenerTaskEnd":
        reason = (event.get("Task End Reason") or {}).get("Reason")
        if reason != "Success":
            return
        key = (_int(event.get("Stage ID")), _int(event.get("Stage Attempt ID")))
        stage = app.stages.setdefault(key, Stage(key[0], key[1], "", 0))
        task = _task(event)
        stage.tasks.append(task)
        stage.accumulators |= set(task.updates)
