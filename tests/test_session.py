import pytest
from pyspark.errors import IllegalArgumentException
from pyspark.sql import SparkSession

import skewagg

pytestmark = pytest.mark.packaging


def test_extension_is_loaded_and_active(spark: SparkSession) -> None:
    assert skewagg.is_loaded(spark)
    assert skewagg.is_active(spark)
    version = skewagg.loaded_version(spark)
    assert version.startswith(f"skewagg {skewagg.__version__} for Spark ")
    assert spark.version.startswith(version.split("for Spark ")[1].split(" ")[0])


def test_disable_and_enable_switch_the_runtime_flag(spark: SparkSession) -> None:
    try:
        skewagg.disable(spark)
        assert spark.conf.get(skewagg.ENABLED_KEY) == "false"
        assert skewagg.is_loaded(spark) and not skewagg.is_active(spark)
        skewagg.enable(spark)
        assert spark.conf.get(skewagg.ENABLED_KEY) == "true"
        assert skewagg.is_active(spark)
    finally:
        skewagg.enable(spark)


def test_invalid_config_value_is_rejected_naming_the_key(spark: SparkSession) -> None:
    with pytest.raises(IllegalArgumentException, match="spark.skewagg.enabled"):
        spark.conf.set(skewagg.ENABLED_KEY, "maybe")
    assert skewagg.is_active(spark)
