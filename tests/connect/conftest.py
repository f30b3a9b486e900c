"""The Spark Connect client tests, run in a pytest process of their own (no JVM: only the client)
by tests/test_connect.py, which starts the server and passes its address in SKEWAGG_CONNECT_URL
and classic PySpark's answers in SKEWAGG_CLASSIC_ANSWERS. Without them nothing here is collected.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterator

import pytest

URL_ENV = "SKEWAGG_CONNECT_URL"
ANSWERS_ENV = "SKEWAGG_CLASSIC_ANSWERS"

collect_ignore_glob = [] if os.environ.get(URL_ENV) else ["*.py"]


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    import skewagg

    session = skewagg.configure(SparkSession.builder.remote(os.environ[URL_ENV])).getOrCreate()
    yield session
    session.stop()


@pytest.fixture(scope="session")
def classic_answers() -> Dict[str, Any]:
    with open(os.environ[ANSWERS_ENV]) as f:
        return json.load(f)
