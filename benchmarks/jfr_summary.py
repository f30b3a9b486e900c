"""Where executor task threads spent their time in a JFR recording (benchmarks/pairs.py --jfr).

    python benchmarks/jfr_summary.py FILE.jfr [FILE2.jfr ...]

Reads `jdk.ExecutionSample` events of threads named "Executor task launch worker" (`jfr print
--json`, the JDK's own tool) and prints, per file and per kind of task (map tasks, which write a
shuffle, and result tasks): the samples, the samples whose stack holds each of a few code areas (a
sample counts once per area, so areas overlap: the scan is below the aggregate in a generated
stage), and the methods most often on top of the stack.
"""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys
from pathlib import Path

# Code areas: a name and a pattern matched against "Class.method" of each frame, the class
# named as the JVM names it (org/apache/spark/...).
AREAS = [
    ("parquet scan (read and decode)", r"parquet|VectorizedColumnReader|ColumnarBatch"),
    ("range / generated input", r"RangeExec|xxhash|XXH64|Murmur3"),
    ("Spark's hash aggregate (map)", r"UnsafeFixedWidthAggregationMap|BytesToBytesMap|"
                                     r"TungstenAggregationIterator|HashAggregateExec"),
    ("skewagg flushing aggregate (its task state)", r"skewagg/localagg/|IdleTaskStates"),
    ("skewagg other operators", r"skewagg/(?!localagg/)"),
    ("shuffle write (the writer's own code)", r"ShuffleWriter\.(write|writePartitionedData)$|"
                                              r"ShuffleExternalSorter|ShuffleInMemorySorter|LZ4|"
                                              r"Zstd|DiskBlockObjectWriter|DataOutputStream"),
    ("shuffle read (fetch, decompress)", r"ShuffleBlockFetcherIterator|BlockStoreShuffleReader|"
                                         r"ShuffledRowRDD|UnsafeRowSerializer.*Deserial"),
    ("sort (join input)", r"UnsafeExternalSorter|UnsafeInMemorySorter|SortExec|RadixSort"),
    ("sort-merge join", r"SortMergeJoin"),
    ("generated stage code", r"GeneratedClass"),
]


def samples(path: Path):
    jfr = Path(os.environ.get("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64")) / "bin" / "jfr"
    out = subprocess.run([str(jfr), "print", "--json", "--stack-depth", "96", "--events",
                          "jdk.ExecutionSample", str(path)], check=True, capture_output=True,
                         text=True).stdout
    for event in json.loads(out)["recording"]["events"]:
        values = event["values"]
        thread = (values.get("sampledThread") or {}).get("javaName") or ""
        if not thread.startswith("Executor task launch worker"):
            continue
        frames = [f"{f['method']['type']['name']}.{f['method']['name']}"
                  for f in (values.get("stackTrace") or {}).get("frames", [])]
        yield frames


def summarize(path: Path) -> None:
    kinds = {"map tasks": "ShuffleMapTask.runTask", "result tasks": "ResultTask.runTask"}
    totals = collections.Counter()
    areas = {kind: collections.Counter() for kind in kinds}
    tops = {kind: collections.Counter() for kind in kinds}
    patterns = [(name, re.compile(p)) for name, p in AREAS]
    for frames in samples(path):
        kind = next((k for k, frame in kinds.items() if any(frame in f for f in frames)), None)
        if kind is None:
            continue
        totals[kind] += 1
        if frames:
            tops[kind][frames[0]] += 1
        for name, pattern in patterns:
            if any(pattern.search(f) for f in frames):
                areas[kind][name] += 1
    print(f"== {path.name}: {sum(totals.values())} task-thread samples")
    for kind in kinds:
        total = max(totals[kind], 1)
        print(f"  {kind}: {totals[kind]} samples")
        for name, _ in AREAS:
            if areas[kind][name]:
                print(f"  {areas[kind][name]:6d} {100 * areas[kind][name] / total:5.1f}%  {name}")
        print("    top of stack:")
        for method, n in tops[kind].most_common(8):
            print(f"  {n:6d} {100 * n / total:5.1f}%  {method}")


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        summarize(Path(arg))
