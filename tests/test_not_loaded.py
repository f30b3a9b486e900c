"""When the extension is not in the session's JVM, skewagg says so and how to fix it."""

import sys
from typing import Dict

import pytest

from subprocesses import APPS, Started, report

pytestmark = pytest.mark.packaging


WAYS = {
    "plain": "spark.sql.extensions does not list io.skewagg.SkewAggExtensions",
    "configure-too-late": "spark.stop()",
    "extension-without-jar": "did not load in the driver JVM",
    "jar-of-another-scala": "a jar of another Scala binary does not load",
}


@pytest.fixture(scope="module")
def apps() -> Dict[str, Started]:
    """Every way's app, all started at once (each is mostly its JVM starting)."""
    return {how: Started([sys.executable, str(APPS / "not_loaded.py"), how]) for how in WAYS}


@pytest.mark.parametrize("how", list(WAYS))
def test_enable_without_the_extension_loaded_fails_with_a_fix(
        apps: Dict[str, Started], how: str) -> None:
    result = report(apps[how].result())
    assert result["loaded"] is False and result["active"] is False
    assert result["error"] is not None and WAYS[how] in result["error"], result["error"]
    assert "skewagg.configure(SparkSession.builder" in result["error"]
