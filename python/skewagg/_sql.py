"""The SQL functions of the extension that answer the Python helpers from any session, classic
or Spark Connect: Python builds the query and reads its rows (docs/connect.md)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, List, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

EXPLAIN_FUNCTION = "skewagg_explain"
TASK_TIMES_FUNCTION = "skewagg_task_times"
SKEW_TEST_FUNCTION = "skewagg_skew_test"
TASK_SLOTS_FUNCTION = "skewagg_task_slots"

TAG_PREFIX = "skewagg-"
"""Only the jobs of tags starting with this are recorded for :data:`TASK_TIMES_FUNCTION`."""


def _scalar(spark: "SparkSession", query: str) -> Any:
    """The one value of a query of one row and one column."""
    return spark.sql(query).collect()[0][0]


def explanation(df: "DataFrame", run: bool) -> str:
    """``skewagg_explain(TABLE(df), run)``: the text of :func:`skewagg.explain`."""
    rows = df.sparkSession.sql(
        f"SELECT line FROM {EXPLAIN_FUNCTION}(TABLE({{df}}), {str(run).lower()})", df=df
    ).collect()
    return "".join(f"{row[0]}\n" for row in rows)


def task_times(spark: "SparkSession", tag: str) -> List[Dict[str, Any]]:
    """``skewagg_task_times(tag)``: one dict per task of the jobs tagged ``tag``, by stage."""
    return [row.asDict() for row in spark.sql(
        f"SELECT * FROM {TASK_TIMES_FUNCTION}('{tag}') ORDER BY stage, attempt, task").collect()]


def skew_test(spark: "SparkSession", partition_bytes: Sequence[int]) -> Dict[str, Any]:
    """``skewagg_skew_test(array(...))``: the rules' skew test under ``spark``'s settings."""
    sizes = ", ".join(str(int(b)) for b in partition_bytes)
    sizes_sql = f"array({sizes})" if sizes else "CAST(array() AS ARRAY<BIGINT>)"
    return json.loads(_scalar(spark, f"SELECT {SKEW_TEST_FUNCTION}({sizes_sql})"))


def task_slots(spark: "SparkSession") -> int:
    """``skewagg_task_slots()``: the slots the rules plan a shuffle's stage for."""
    return int(_scalar(spark, f"SELECT {TASK_SLOTS_FUNCTION}()"))
