"""Strip the gateway's own names for trust data from what an upstream sends.

A client reads a top-level ``trust`` object, a stream chunk carrying one, or a
``trustgate.trust`` event as the gateway's verdict (``exporters.headers`` holds
the names). An upstream can send any of them; in modes ``off`` and ``async``,
where the gateway adds none, the client would take the upstream's for the
gateway's. So every upstream reply loses them, in every mode, before the
gateway adds its own: whole replies as they enter (``completion``), stream
events as the taps frame them. Response headers need no stripping: the gateway
never relays an upstream's headers, so ``x-trust-*`` only ever comes from it.

Replies without the names go on byte for byte: the letters of ``trust`` (or a
``\\u`` escape, which could spell them) must appear before anything is parsed.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from exporters import TRUST_EVENT, TRUST_FIELD

__all__ = ["may_name_trust", "stripped_event", "stripped_reply"]

_EVENT_NAME = TRUST_EVENT.encode()
_FIELD_NAME = TRUST_FIELD.encode()
_LINE = re.compile(rb"\r\n|\r|\n")


def may_name_trust(data: bytes) -> bool:
    """Whether ``data`` may carry trust data: the letters of ``trust``, or a ``\\u`` escape that could spell them."""
    return _FIELD_NAME in data or b"\\u" in data


def _object(data: bytes) -> dict[str, Any] | None:
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return payload if isinstance(payload, dict) else None


def stripped_reply(raw: bytes) -> bytes:
    """A whole JSON reply without a top-level ``trust`` field (``raw`` itself when it has none)."""
    if not may_name_trust(raw):
        return raw
    payload = _object(raw)
    if payload is None or TRUST_FIELD not in payload:
        return raw
    del payload[TRUST_FIELD]
    return orjson.dumps(payload)


def stripped_event(event: bytes) -> bytes | None:
    """One SSE event (without its blank line) with the trust data gone; None when nothing of it is left.

    Judged as a client's SSE reader reads it: a lone CR ends a line too, so
    what looks like one event may be several, each judged on its own; the data
    of several ``data:`` lines is joined. A ``trustgate.trust`` event (by name
    or by type) is dropped; a ``trust`` field is taken out of its payload, and out of the response object
    a Responses event carries (where the gateway puts its own on ``response.completed``).
    """
    if not may_name_trust(event):
        return event
    lines = _LINE.split(event)
    groups: list[list[bytes]] = [[]]
    for line in lines:
        if line:
            groups[-1].append(line)
        else:
            groups.append([])
    kept = [result for group in groups if group and (result := _stripped_group(group)) is not None]
    if kept == [event]:
        return event
    return b"\n\n".join(kept) if kept else None


def _stripped_group(lines: list[bytes]) -> bytes | None:
    original = b"\n".join(lines)
    fields = [(name, value.removeprefix(b" ")) for name, _, value in (line.partition(b":") for line in lines)]
    if any(name == b"event" and value.strip() == _EVENT_NAME for name, value in fields):
        return None
    data = [value for name, value in fields if name == b"data"]
    payload = _object(b"\n".join(data)) if data else None
    if payload is None:
        return original
    if payload.get("type") == TRUST_EVENT:
        return None
    inner = payload.get("response")  # a Responses event's response object, where the gateway puts its own
    holders = [holder for holder in (payload, inner) if isinstance(holder, dict) and TRUST_FIELD in holder]
    if not holders:
        return original
    for holder in holders:
        del holder[TRUST_FIELD]
    rest = [line for (name, _), line in zip(fields, lines, strict=True) if name != b"data"]
    return b"\n".join([*rest, b"data: " + orjson.dumps(payload)])
