"""The gateway's OpenAPI schema is the committed one: a refactoring of the handlers changes no endpoint's contract.

Route paths, methods, operation ids (from the handlers' names), parameters and
response shapes all show in the schema. A change that means to alter them
rewrites the snapshot, and the diff shows in review:

    python -m tests.proxy.server.test_openapi_schema > tests/proxy/server/openapi_schema.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from proxy import create_app, settings_from_dict
from tests.conftest import gateway_config

pytestmark = pytest.mark.unit

SNAPSHOT = Path(__file__).with_name("openapi_schema.json")


def current_schema() -> dict[str, Any]:
    app = create_app(settings_from_dict(gateway_config("http://127.0.0.1:9"), {}), registry=CollectorRegistry())
    return app.openapi()


def test_the_schema_is_the_committed_snapshot() -> None:
    assert json.dumps(current_schema(), indent=1) + "\n" == SNAPSHOT.read_text(), (
        f"the OpenAPI schema changed; if meant, rewrite {SNAPSHOT.name} (see this module's docstring)"
    )


if __name__ == "__main__":
    sys.stdout.write(json.dumps(current_schema(), indent=1) + "\n")
