"""Command line: ``python -m skewagg jar-path | server-conf | spark-lines | demo | analyze |
advise``."""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from typing import List, Optional

from skewagg._jars import supported_spark_lines
from skewagg.errors import SkewAggError
from skewagg.session import jar_path, server_flags

FORMATS = {"parquet", "csv", "json", "orc"}


def analyze_file(path: str, keys: str, fmt: Optional[str], top: int,
                 partitions: Optional[int], plot: Optional[str]) -> int:
    """Prints the skew report of the rows in ``path``; saves the charts to ``plot``."""
    import os

    if not os.path.exists(path):
        raise SkewAggError(f"no such file or directory: {path}")
    if fmt is None:
        ext = os.path.splitext(path.rstrip("/"))[1].lstrip(".").lower()
        fmt = ext if ext in FORMATS else "parquet"
    from pyspark.sql import SparkSession

    from skewagg.session import configure
    from skewagg.skew_report import analyze

    builder = (SparkSession.builder.master("local[*]").appName("skewagg analyze")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false"))
    spark = configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        reader = spark.read.format(fmt)
        if fmt == "csv":
            reader = reader.option("header", "true").option("inferSchema", "true")
        try:
            df = reader.load(path)
        except Exception as exc:  # Spark's AnalysisException: say which file and format
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise SkewAggError(f"cannot read {path} as {fmt}: {first} (use --format to pick "
                               f"one of {', '.join(sorted(FORMATS))})") from exc
        key_list = [k.strip() for k in keys.split(",") if k.strip()]
        report = analyze(df, key_list, top=top, num_partitions=partitions)
        print(report)
        if plot:
            report.plot(plot)
            print(f"charts saved to {plot}")
    finally:
        spark.stop()
    return 0


def advise_logs(paths: List[str], task_slots: Optional[int], conf: List[str],
                html: Optional[str]) -> int:
    """Prints the advisor's table for the event logs under ``paths``; writes the HTML report to
    ``html``. Exit code 0, or 1 when some logs could not be read (they are listed)."""
    from skewagg.advisor import advise

    settings = {}
    for item in conf:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SkewAggError(f"--conf takes KEY=VALUE, got {item!r}")
        settings[key.strip()] = value.strip()
    report = advise(paths, task_slots=task_slots, conf=settings)
    print(report)
    if html:
        report.to_html(html)
        print(f"HTML report written to {html}")
    for error in report.errors:
        print(f"skewagg: {error}", file=sys.stderr)
    return 1 if report.errors else 0


SERVER_CONF_FORMATS = ("args", "shell", "conf")

# What word splitting or globbing would change in an unquoted $(...).
_UNSAFE_IN_SUBSTITUTION = re.compile(r"[\s*?\[\]]")


def server_conf(flags: List[str], fmt: str) -> str:
    """``flags`` (``--jars PATH --conf K=V ...``) as ``fmt`` says: ``args``, one line that an
    unquoted ``$(...)`` splits into exactly these arguments; ``shell``, quoted for ``eval``;
    ``conf``, lines of ``spark-defaults.conf``."""
    if fmt == "shell":
        return shlex.join(flags)
    if fmt == "conf":
        pairs = [("spark.jars", value) if option == "--jars" else tuple(value.split("=", 1))
                 for option, value in zip(flags[::2], flags[1::2])]
        return "\n".join(f"{key:<44} {value}" for key, value in pairs)
    unsafe = [flag for flag in flags if _UNSAFE_IN_SUBSTITUTION.search(flag)]
    if unsafe:
        raise SkewAggError(
            f"{unsafe[0]!r} holds a space or a glob character, which $(...) would split or "
            "expand: use eval \"spark-submit $(python -m skewagg server-conf --format shell) "
            "...\", or put the lines of --format conf in spark-defaults.conf")
    return " ".join(flags)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m skewagg", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    jar = sub.add_parser(
        "jar-path", help="print the bundled jar for the Spark here: the running one, else "
                         "$SPARK_HOME's, else the imported pyspark's (for spark-submit --jars)")
    jar.add_argument("--spark-version", help="pick the jar for this Spark version instead")
    jar.add_argument("--scala-version",
                     help="pick the jar built with this Scala (2.12 or 2.13; default: the Scala "
                          "of the Spark here, else the line's default)")
    server = sub.add_parser(
        "server-conf",
        help="print the spark-submit flags that load skewagg into an application started "
             "elsewhere, such as a Spark Connect server")
    server.add_argument("--spark-version",
                        help="the application's Spark version (default: the Spark here)")
    server.add_argument("--scala-version", help="the application's Scala (2.12 or 2.13)")
    server.add_argument("--format", choices=SERVER_CONF_FORMATS, default="args",
                        help="args (default): one line of arguments for $(...); shell: quoted "
                             "for eval; conf: spark-defaults.conf lines")
    sub.add_parser("spark-lines", help="print the Spark major.minor lines this build supports")
    demo = sub.add_parser("demo", help="run a skewed join + aggregation with skewagg off and on")
    demo.add_argument("--rows", type=int, default=None, help="rows of the fact table")
    analyze = sub.add_parser(
        "analyze", help="skew report of a file's rows by key columns (local Spark session)")
    analyze.add_argument("path", help="a file or directory Spark can read")
    analyze.add_argument("--keys", required=True, help="comma-separated key columns, e.g. k1,k2")
    analyze.add_argument("--format", default=None, choices=sorted(FORMATS),
                         help="file format (default: from the path's extension, else parquet)")
    analyze.add_argument("--top", type=int, default=20, help="heaviest keys to list (default 20)")
    analyze.add_argument("--partitions", type=int, default=None,
                         help="hash partitions (default: spark.sql.shuffle.partitions, 200)")
    analyze.add_argument("--plot", default=None, help="also save the charts to this PNG file")
    advise = sub.add_parser(
        "advise", help="which stages of these Spark event logs skewagg would change, and the "
                       "estimated makespan with it (no JVM, no Spark session)")
    advise.add_argument("paths", nargs="+", metavar="PATH",
                        help="event log files, directories of them, rolling-log directories "
                             "(eventlog_v2_*); lz4, lzf, snappy and zstd logs too")
    advise.add_argument("--task-slots", type=int, default=None,
                        help="plan for this many task slots (as spark.skewagg.skew.taskSlots) "
                             "instead of each application's executor cores")
    advise.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a skewagg setting, e.g. spark.skewagg.skew.minPartitionSize=4MB "
                             "(default: the application's, else skewagg's default)")
    advise.add_argument("--html", default=None, metavar="FILE",
                        help="also write the HTML report, with a plot per stage, to FILE")
    args = parser.parse_args(argv)

    try:
        if args.command == "jar-path":
            print(jar_path(args.spark_version, args.scala_version))
        elif args.command == "server-conf":
            print(server_conf(server_flags(args.spark_version, args.scala_version),
                              args.format))
        elif args.command == "spark-lines":
            print("\n".join(supported_spark_lines()))
        elif args.command == "demo":
            from skewagg.demo import run

            return run(rows=args.rows)
        elif args.command == "analyze":
            return analyze_file(args.path, args.keys, args.format, args.top, args.partitions,
                                args.plot)
        elif args.command == "advise":
            return advise_logs(args.paths, args.task_slots, args.conf, args.html)
    except SkewAggError as exc:
        print(f"skewagg: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
