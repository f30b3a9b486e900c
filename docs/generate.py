"""Renders the docs' example outputs and pictures from real runs (`make docs`).

Reads docs/src/*.md, replaces each ``<!-- run: NAME -->`` line with the output of the example
NAME (run here, on a small local[2] session), writes docs/*.md, and saves the PNGs in
docs/images/. The examples use small data (hundreds of thousands of rows) with skewagg's size
thresholds lowered to match, and say so; docs/benchmarks.md has the measured speed-ups.

    python docs/generate.py            # from the repository root, after `make jar`
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
from pathlib import Path
from typing import Callable, Dict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyBboxPatch  # noqa: E402

DOCS = Path(__file__).resolve().parent
IMAGES = DOCS / "images"
ROWS = 400_000

# The thresholds of the examples, sized for ROWS rows (the defaults are 16MB and 1MB).
SMALL_DATA = {
    "spark.sql.shuffle.partitions": "32",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.adaptive.coalescePartitions.enabled": "false",
    "spark.skewagg.skew.minPartitionSize": "256k",
    "spark.skewagg.skew.minSplitSize": "64k",
}


def session():  # type: ignore[no-untyped-def]
    from pyspark.sql import SparkSession

    import skewagg

    builder = SparkSession.builder.master("local[2]").appName("skewagg docs") \
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
    for key, value in SMALL_DATA.items():
        builder = builder.config(key, value)
    spark = skewagg.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def orders(spark):  # type: ignore[no-untyped-def]
    """(customer_id, amount): customer 0 places 30% of the orders, 7,000 other customers the
    rest."""
    from pyspark.sql import functions as F

    uniform = (F.col("id") * 7919) % 10_000
    customer = F.when(F.col("id") % 10 < 3, F.lit(0)).otherwise(uniform)
    return spark.range(0, ROWS, 1, 8).select(customer.alias("customer_id"),
                                       ((F.col("id") % 1000) / 10.0).alias("amount"))


def customers(spark):  # type: ignore[no-untyped-def]
    from pyspark.sql import functions as F

    return spark.range(0, 10_000).select(F.col("id").alias("customer_id"),
                                         ((F.col("id") % 5) / 20.0).alias("discount"))


def query(spark):  # type: ignore[no-untyped-def]
    """Revenue per customer: the aggregate reads both sides of the join."""
    from pyspark.sql import functions as F

    return orders(spark).join(customers(spark), "customer_id").groupBy("customer_id") \
        .agg(F.sum(F.col("amount") * (1 - F.col("discount"))).alias("revenue"))


def one_side_query(spark):  # type: ignore[no-untyped-def]
    """Order total per customer: the aggregate reads the orders side only."""
    from pyspark.sql import functions as F

    return orders(spark).join(customers(spark), "customer_id").groupBy("customer_id") \
        .agg(F.sum("amount").alias("total"))


def captured(body: Callable[[], None]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        body()
    return out.getvalue().rstrip("\n")


def block(text: str, lang: str = "text") -> str:
    return f"```{lang}\n{text}\n```"


ADVISE_SETTINGS = {"spark.skewagg.skew.minPartitionSize": "4MB"}
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")


def advise_example() -> str:
    """The advisor on the event log of tests/apps/event_log_queries.py (vanilla Spark, 3M rows,
    40% on one key), planned for 64 slots; the HTML report rendered by a headless browser into
    docs/images/advise-report.png."""
    import shutil
    import subprocess
    import tempfile

    from skewagg.advisor import advise

    browser = next((b for b in map(shutil.which, BROWSERS) if b), None)
    if browser is None:
        raise SystemExit("the advisor's screenshot needs a headless browser: apt-get install "
                         "chromium")
    app = DOCS.parent / "tests" / "apps" / "event_log_queries.py"
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, str(app), f"{tmp}/logs", "--rows", "3000000"],
                       check=True, capture_output=True)
        report = advise(f"{tmp}/logs", task_slots=64, conf=ADVISE_SETTINGS)
        report.to_html(f"{tmp}/report.html")
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", "--window-size=1200,1500",
                        f"--screenshot={IMAGES / 'advise-report.png'}",
                        f"file://{tmp}/report.html"], check=True, capture_output=True)
    return block(str(report))


def examples(spark) -> Dict[str, Callable[[], str]]:  # type: ignore[no-untyped-def]
    import skewagg

    def settings() -> str:
        return block("\n".join(f"{k}={v}" for k, v in SMALL_DATA.items()), "properties")

    def report() -> str:
        r = skewagg.analyze(orders(spark), ["customer_id"], top=5)
        r.plot(str(IMAGES / "skew-report.png"))
        return block(str(r))

    def explain() -> str:
        df = query(spark)
        before = skewagg.explain_text(df)
        df.collect()
        return block("# before the query ran\n" + before.rstrip() +
                     "\n\n# after df.collect()\n" + skewagg.explain_text(df).rstrip())

    def one_side() -> str:
        return block(skewagg.explain_text(one_side_query(spark), run=True).rstrip())

    def spark_explain() -> str:
        df = query(spark)
        df.collect()
        text = captured(df.explain)
        start = text.index("== Extended Information (skewagg) ==")
        return block(text[start:].rstrip())

    def refusals() -> str:
        from pyspark.sql import functions as F

        hinted = query(spark).hint("no_skew_agg")
        plain = orders(spark).groupBy("customer_id").agg(F.sum("amount"))
        uniform = orders(spark).filter("customer_id != 0").join(customers(spark), "customer_id") \
            .groupBy("customer_id").agg(F.sum(F.col("amount") * (1 - F.col("discount"))))
        parts = []
        for title, df in (("NO_SKEW_AGG hint", hinted), ("plain groupBy", plain),
                          ("join without skew", uniform)):
            parts.append(f"# {title}\n" + skewagg.explain_text(df, run=True).rstrip())
        return block("\n\n".join(parts))

    def stages() -> str:
        for on in (False, True):  # warm-up: the JIT and caches, so that both runs start equal
            (skewagg.enable if on else skewagg.disable)(spark)
            query(spark).collect()
        skewagg.disable(spark)
        off = skewagg.stage_report(spark, query(spark).collect, label="skewagg off")
        skewagg.enable(spark)
        on = skewagg.stage_report(spark, query(spark).collect, label="skewagg on")
        off.plot(str(IMAGES / "stage-report.png"), compare=on)
        return block(f"{off}\n\n{on}")

    def advise() -> str:
        return advise_example()

    def architecture() -> str:
        draw_architecture(IMAGES / "architecture.png")
        return "![Which skewagg rule runs in which phase](images/architecture.png)"

    return {"settings": settings, "report": report, "explain": explain,
            "one-side": one_side, "spark-explain": spark_explain, "refusals": refusals,
            "stages": stages,
            "architecture": architecture, "advise": advise}


PHASES = [
    ("Analysis", ["ResolveSkewAggHints (hint resolution)", "CheckSkewAggHints (check rule)"]),
    ("Physical planning\n(strategies)", ["LocalAggregateBeforeJoin",
                                         "PlanPartialAggregates (FlushingPartialAggregate)",
                                         "PartialAggregateBeforeRepartition",
                                         "PlanHolisticAggregatesSortBased (SingleKeyAggregate)"]),
    ("Adaptive execution:\nquery-stage preparation",
     ["SplitSkewedShuffleBelowAggregate", "SplitSkewedJoinBelowAggregate",
      "SplitSkewedBucketsBelowAggregate", "SplitMergeOfPartialStates", "SplitSkewedWindow",
      "LeftAloneReasons (records why not)", "SkewAggCostEvaluator (cost model)"]),
    ("Adaptive execution:\nquery-stage optimization", ["CoalescePartialResultExchanges",
                                                  "DropUnneededMergeAfterShuffle"]),
    ("Without adaptive execution:\nbefore columnar transitions",
     ["SplitSkewedBucketsBelowAggregate", "SplitSkewedWindow (adaptive = false)",
      "LeftAloneReasons (adaptive = false)"]),
    ("Execution and explain", ["SkewAggLocalStage (marker with SQL metrics)",
                               "TaskTimeRecorder (listener)",
                               "SkewAggExplainGenerator (EXPLAIN)"]),
]


def draw_architecture(path: Path) -> None:
    fig, ax = plt.subplots(figsize=(11, 7))
    ax.set_xlim(0, 11)
    ax.set_ylim(0, len(PHASES) + 0.4)
    ax.axis("off")
    for i, (phase, rules) in enumerate(PHASES):
        y = len(PHASES) - 1 - i + 0.2
        ax.add_patch(FancyBboxPatch((0.1, y), 3.2, 0.8, boxstyle="round,pad=0.02",
                                    facecolor="#dde8f5", edgecolor="#3b6ea5"))
        ax.text(1.7, y + 0.4, phase, ha="center", va="center", fontsize=10, weight="bold")
        ax.add_patch(FancyBboxPatch((3.6, y), 7.2, 0.8, boxstyle="round,pad=0.02",
                                    facecolor="#f5f0dd", edgecolor="#a58a3b"))
        per_line = 1 if len(rules) <= 3 else 2
        lines = ["   ".join(rules[j:j + per_line]) for j in range(0, len(rules), per_line)]
        ax.text(3.8, y + 0.4, "\n".join(lines), ha="left", va="center", fontsize=8.5)
        if i < len(PHASES) - 1:
            ax.annotate("", xy=(1.7, y - 0.02), xytext=(1.7, y - 0.18),
                        arrowprops={"arrowstyle": "<-", "color": "#3b6ea5"})
    ax.set_title("skewagg: which rule runs in which phase of a Spark SQL query", fontsize=12)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def render(spark) -> None:  # type: ignore[no-untyped-def]
    IMAGES.mkdir(exist_ok=True)
    runs = examples(spark)
    for source in sorted((DOCS / "src").glob("*.md")):
        text = source.read_text()

        def replace(match: "re.Match[str]") -> str:
            name = match.group(1)
            if name not in runs:
                raise SystemExit(f"{source}: no example named {name!r}; known: {sorted(runs)}")
            print(f"  {source.name}: {name}", file=sys.stderr)
            return runs[name]()

        body = re.sub(r"^<!-- run: ([a-z-]+) -->$", replace, text, flags=re.MULTILINE)
        header = (f"<!-- Generated by `make docs` (docs/generate.py) from docs/src/{source.name};"
                  " edit that file. -->\n\n")
        (DOCS / source.name).write_text(header + body)


def main() -> int:
    spark = session()
    try:
        render(spark)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
