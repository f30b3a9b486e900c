"""When the extension is not in the session's JVM, skewagg says so and how to fix it."""

import sys
from typing import Dict

import pytest

from subprocesses import APPS, Started, report

pytestmark = [pytest.mark.packaging, pytest.mark.spread]


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


class _Catalog:
    @staticmethod
    def functionExists(name: str) -> bool:
        return False


class _ConnectSession:
    """Stands for a Spark Connect client session (pyspark.sql.connect.session.SparkSession) of
    a server started without skewagg: no JVM here to start or stop."""

    catalog = _Catalog()


_ConnectSession.__module__ = "pyspark.sql.connect.session"


def test_not_loaded_on_a_connect_server_names_the_server_flags() -> None:
    import skewagg

    with pytest.raises(skewagg.NotLoadedError) as error:
        skewagg.require_loaded(_ConnectSession())  # type: ignore[arg-type]
    message = str(error.value)
    assert "this is a Spark Connect session, and its server was started without skewagg" in message
    assert " ".join(skewagg.server_flags()) in message
    assert "spark.stop() on the client does not restart the server" in message
