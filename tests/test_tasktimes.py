from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from skewagg.advisor.makespan import QueryTimes, StageTimes, makespan
from skewagg.stage_report import TaskTimeRecorder


def test_makespan_list_schedules_in_order() -> None:
    assert makespan([], 4) == 0
    assert makespan([10, 10, 10, 10], 2) == 20
    assert makespan([100, 1, 1, 1], 64) == 100      # one hot task decides the stage
    assert makespan([5, 5, 10], 2) == 15            # third task waits for a slot at t=5
    assert makespan([3, 3, 3], 1) == 9


def test_query_makespan_adds_stages_and_finds_the_hot_stage() -> None:
    q = QueryTimes([StageTimes(0, 0, "a", [4, 4]), StageTimes(1, 0, "b", [9, 1, 1])])
    assert q.makespan(2) == 4 + 9
    assert q.hot_stage.stage == 1 and q.hot_stage.max_ms == 9 and q.hot_stage.median_ms == 1


def test_recorder_sees_every_task_of_a_query(spark: SparkSession) -> None:
    recorder = TaskTimeRecorder(spark)
    try:
        df = spark.range(0, 1000, 1, 4).groupBy((F.col("id") % 3).alias("k")).count()
        rows, times = recorder.measure(df.collect)
        assert len(rows) == 3
        assert sum(len(s.durations_ms) for s in times.stages) >= 4
        assert any(sum(s.records) == 1000 for s in times.stages)  # the scan read every row
    finally:
        recorder.close()
