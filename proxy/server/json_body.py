"""A request body that must be a JSON object: read once, the same 400 for every endpoint that takes one."""

from __future__ import annotations

from typing import Any

import orjson

from ..base.errors import InvalidRequest

__all__ = ["json_object"]


def json_object(raw: bytes, code: str) -> dict[str, Any]:
    """``raw`` as a JSON object; a 400 with ``code`` when it is not one."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequest("The body must be a JSON object", code=code) from exc
    if not isinstance(body, dict):
        raise InvalidRequest("The body must be a JSON object", code=code)
    return body
