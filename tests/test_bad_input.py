"""Bad settings, as a user would give them: an invalid value fails when it is set (at session
start, with spark.conf.set, with SQL SET) naming the key, the value and the valid values; a
misspelt spark.skewagg.* key is a warning naming the closest setting, and the job runs.
docs/bad-input.md lists these messages."""

from __future__ import annotations

import sys

import pytest
from pyspark.errors import IllegalArgumentException
from pyspark.sql import SparkSession

import skewagg
from subprocesses import APPS, report, run

FACTOR_MESSAGE = ("Invalid value '0.5' for spark.skewagg.skew.factor: must be a finite number of "
                  "at least 1.0.")


def test_invalid_value_at_session_start_fails_naming_key_and_valid_values() -> None:
    proc = run([sys.executable, str(APPS / "bad_settings.py"), "spark.skewagg.skew.factor=0.5"])
    result = report(proc)
    assert result["count"] is None
    assert FACTOR_MESSAGE in result["error"], result["error"]


def test_misspelt_key_warns_naming_the_closest_setting_and_the_job_runs() -> None:
    proc = run([sys.executable, str(APPS / "bad_settings.py"), "spark.skewagg.skewfactor=3"])
    result = report(proc)
    assert result == {"error": None, "count": 7}
    assert ("WARN WarnUnknownSkewAggSettings: spark.skewagg.skewfactor is not a skewagg setting "
            "and has no effect; did you mean spark.skewagg.skew.factor? The settings are listed "
            "in docs/configs.md.") in proc.stderr, proc.stderr[-3000:]


@pytest.mark.parametrize("key, value, valid", [
    ("spark.skewagg.enabled", "yes", "true or false"),
    ("spark.skewagg.localAggregate.capacity", "8", "an integer from 16 to 16777216"),
    ("spark.skewagg.skew.minSplitSize", "1 parsec",
     "a size of at least 1b, in bytes or with a unit such as 512k, 16m, 1g"),
])
def test_invalid_value_set_at_runtime_fails_and_keeps_the_old_value(
        spark: SparkSession, key: str, value: str, valid: str) -> None:
    before = spark.conf.get(key)
    message = f"Invalid value '{value}' for {key}: must be {valid}."
    with pytest.raises(IllegalArgumentException) as error:
        spark.conf.set(key, value)
    assert message in str(error.value)
    with pytest.raises(IllegalArgumentException) as error:
        spark.sql(f"SET {key}={value}")
    assert message in str(error.value)
    assert spark.conf.get(key) == before
    assert skewagg.is_active(spark)
