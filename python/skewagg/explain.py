"""Why skewagg rewrote, or left alone, each aggregate of a query.

The text comes from the extension (``SkewAggExplain`` in the jar), the same that Spark prints in
its own ``df.explain("extended")`` under "Extended Information (skewagg)" when
``spark.sql.extendedExplainProviders`` lists :data:`EXPLAIN_GENERATOR_CLASS` (``configure()``
adds it). skewagg's run-time rewrites are decided from the sizes of shuffles that have run, so
for adaptive plans explain a DataFrame after an action ran it (``df.collect()``, a write, ...):
a DataFrame keeps its executed plan. Before that, the text says "not decided yet";
``explain(df, run=True)`` runs the query first (counting its rows on the executors, without
collecting them).

On a Spark Connect client, whose DataFrames keep no executed plan (the server plans every action
and every explain anew), the same text comes from the extension's table function
``skewagg_explain(TABLE(q) [, run])``: the decisions of the last run of the same query on the
server, or of a run made first with ``run=True``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skewagg._bridge import bridge, is_connect
from skewagg._sql import explanation
from skewagg.session import require_loaded

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

def explain_text(df: "DataFrame", run: bool = False) -> str:
    """The explanation :func:`explain` prints, as a string."""
    spark = df.sparkSession
    require_loaded(spark)
    if is_connect(spark):
        # The client's DataFrame keeps no executed plan: the server explains the last run of the
        # same query (or runs it first).
        return explanation(df, run)
    execution = df._jdf.queryExecution()
    if run:
        execution.toRdd().count()
    return str(bridge(spark).explain(execution.executedPlan()))


def explain(df: "DataFrame", run: bool = False) -> None:
    """Prints, for every aggregate and window of ``df``'s query, whether skewagg rewrote it and why
    or why not, with the numbers it used. With ``run=True``, runs the query first (adaptive plans
    are decided at run time)."""
    print(explain_text(df, run=run), end="")
