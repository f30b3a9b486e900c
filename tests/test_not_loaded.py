"""When the extension is not in the session's JVM, skewagg says so and how to fix it."""

import sys

import pytest

from subprocesses import APPS, report, run

pytestmark = pytest.mark.packaging


@pytest.mark.parametrize(
    "how, expected",
    [
        ("plain", "spark.sql.extensions does not list io.skewagg.SkewAggExtensions"),
        ("configure-too-late", "spark.stop()"),
        ("extension-without-jar", "did not load in the driver JVM"),
        ("jar-of-another-scala", "a jar of another Scala binary does not load"),
    ],
)
def test_enable_without_the_extension_loaded_fails_with_a_fix(how: str, expected: str) -> None:
    result = report(run([sys.executable, str(APPS / "not_loaded.py"), how]))
    assert result["loaded"] is False and result["active"] is False
    assert result["error"] is not None and expected in result["error"], result["error"]
    assert "skewagg.configure(SparkSession.builder" in result["error"]
