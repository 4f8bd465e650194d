"""The API reference is read from the OpenAPI schema the app serves: every route is in it, once."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from docsite.api_reference import api_markdown, openapi_schema
from proxy import create_app, settings_from_dict
from tests.conftest import gateway_config

pytestmark = pytest.mark.unit


def test_the_schema_is_the_one_a_gateway_serves_whatever_its_config() -> None:
    """The reference is built on the embedded default config; routes do not depend on the config."""
    app = create_app(settings_from_dict(gateway_config("http://127.0.0.1:9"), {}), registry=CollectorRegistry())
    assert openapi_schema() == app.openapi()


def test_every_route_of_the_schema_is_named_once() -> None:
    schema = openapi_schema()
    markdown = api_markdown(schema)
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            named = markdown.count(f"### `{method.upper()} {path}`") + markdown.count(f"`{path}`.")
            assert named == 1, (method, path)
            assert markdown.count(f"`{operation['operationId']}`") <= 1
    assert "Also served at `/chat/completions`." in markdown


SCHEMA: dict[str, Any] = {
    "paths": {
        "/things/{thing_id}": {
            "get": {
                "summary": "Read Thing",
                "operationId": "read_thing_root",
                "responses": {"200": {"description": "Successful Response"}},
            }
        },
        "/v1/things/{thing_id}": {
            "get": {
                "summary": "Read Thing",
                "description": "One thing, by id.",
                "operationId": "read_thing_v1",
                "parameters": [
                    {"name": "thing_id", "in": "path", "required": True, "schema": {"type": "string"}},
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "default": 50}},
                ],
                "responses": {
                    "200": {"description": "Successful Response", "content": {"application/json": {"schema": {}}}},
                    "422": {
                        "description": "Validation Error",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/HTTPValidationError"}}
                        },
                    },
                },
            }
        },
        "/health": {"get": {"summary": "Health", "operationId": "health", "responses": {}}},
    }
}


def test_a_route_and_its_root_twin_are_one_operation_with_its_parameters() -> None:
    markdown = api_markdown(SCHEMA)
    assert markdown.index("### `GET /health`") < markdown.index("### `GET /v1/things/{thing_id}`")
    assert "### `GET /things/{thing_id}`" not in markdown
    assert (
        "Read Thing. Also served at `/things/{thing_id}`. Operation id `read_thing_v1`.\n\nOne thing, by id."
        in markdown
    )
    assert "| `thing_id` | path | string | yes |  |" in markdown
    assert "| `limit` | query | integer | no | `50` |" in markdown
    assert "`200` Successful Response (application/json); `422` Validation Error (application/json)." in markdown
