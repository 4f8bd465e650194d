"""The API reference, read from the OpenAPI schema the gateway serves (``/openapi.json``).

The schema comes from the app itself, built on the embedded default config (routes do not depend on
the config: tests/proxy/server/test_openapi_schema.py holds the same schema as its snapshot), so a route
added, renamed or given a parameter shows here at the next build.
"""

from __future__ import annotations

import functools
from typing import Any

from prometheus_client import CollectorRegistry

from proxy import create_app, default_config_path, load_settings

__all__ = ["api_markdown", "openapi_schema"]

# The routes served both under /v1 and at the root, as LiteLLM's proxy serves them: listed once, under /v1.
_VERSIONED = "/v1"


@functools.cache
def openapi_schema() -> dict[str, Any]:
    """The schema the app serves, from an app that is built but never started (no upstream is called)."""
    schema: dict[str, Any] = create_app(
        load_settings(default_config_path(), {}), registry=CollectorRegistry()
    ).openapi()
    return schema


def _schema_type(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " or ".join(_schema_type(option) for option in schema["anyOf"])
    if schema.get("type") == "array":
        return f"list of {_schema_type(schema.get('items', {}))}"
    return str(schema.get("type", "any"))


def _parameters(operation: dict[str, Any]) -> list[str]:
    parameters = operation.get("parameters", [])
    if not parameters:
        return []
    lines = ["| parameter | in | type | required | default |", "|---|---|---|---|---|"]
    for parameter in parameters:
        schema = parameter.get("schema", {})
        default = f"`{schema['default']}`" if "default" in schema else ""
        required = "yes" if parameter.get("required") else "no"
        lines.append(f"| `{parameter['name']}` | {parameter['in']} | {_schema_type(schema)} | {required} | {default} |")
    return [*lines, ""]


def _responses(operation: dict[str, Any]) -> list[str]:
    described = [
        f"`{status}` {response.get('description', '')}"
        + (f" ({', '.join(response['content'])})" if response.get("content") else "")
        for status, response in operation.get("responses", {}).items()
    ]
    return ["Responses as the schema declares them: " + "; ".join(described) + ".", ""] if described else []


def _operation(method: str, paths: list[str], operation: dict[str, Any]) -> list[str]:
    main, *aliases = paths
    lines = [f"### `{method.upper()} {main}`", "", f"{operation.get('summary', '')}."]
    if aliases:
        lines[-1] += " Also served at " + ", ".join(f"`{alias}`" for alias in aliases) + "."
    lines[-1] += f" Operation id `{operation['operationId']}`."
    lines.append("")
    if operation.get("description"):
        lines += [operation["description"].strip(), ""]
    return [*lines, *_parameters(operation), *_responses(operation)]


def api_markdown(schema: dict[str, Any]) -> str:
    """Each operation once, sorted by path, with the root-level twin of a ``/v1`` route named beside it."""
    twins: dict[tuple[str, str], list[str]] = {}
    for path, methods in schema["paths"].items():
        for method in methods:
            twins.setdefault((path.removeprefix(_VERSIONED), method), []).append(path)
    groups = sorted(
        (sorted(paths, key=lambda p: (not p.startswith(_VERSIONED), p)), method) for (_, method), paths in twins.items()
    )
    lines: list[str] = []
    for paths, method in groups:
        lines += _operation(method, paths, schema["paths"][paths[0]][method])
    return "\n".join(lines)
