"""Command line: ``python -m skewagg jar-path | spark-lines | demo``."""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from skewagg import jar_path, supported_spark_lines
from skewagg.errors import SkewAggError


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m skewagg", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    jar = sub.add_parser(
        "jar-path", help="print the bundled jar for the installed pyspark (for spark-submit --jars)"
    )
    jar.add_argument("--spark-version", help="pick the jar for this Spark version instead")
    sub.add_parser("spark-lines", help="print the Spark major.minor lines this build supports")
    demo = sub.add_parser("demo", help="run a skewed join + aggregation with skewagg off and on")
    demo.add_argument("--rows", type=int, default=None, help="rows of the fact table")
    args = parser.parse_args(argv)

    try:
        if args.command == "jar-path":
            print(jar_path(args.spark_version))
        elif args.command == "spark-lines":
            print("\n".join(supported_spark_lines()))
        elif args.command == "demo":
            from skewagg.demo import run

            return run(rows=args.rows)
    except SkewAggError as exc:
        print(f"skewagg: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
