"""``lp`` as the tests read it: a gateway config per upstream path, the log-probabilities a client sees, and the
reason a record gives for having no ``lp``."""

from __future__ import annotations

from typing import Any

from tests.proxy.scored_gateway import scoring_config


def lp_config(upstream_url: str, path: str) -> dict[str, Any]:
    config = scoring_config(upstream_url)
    config["trustgate"]["passthrough"] = path == "passthrough"
    return config


def visible_logprobs(payload: Any) -> list[Any]:
    """Every non-empty ``logprobs`` in a reply or event, however the endpoint nests it (null and [] are empty)."""
    if isinstance(payload, dict):
        own = [payload["logprobs"]] if payload.get("logprobs") else []
        return own + [found for value in payload.values() for found in visible_logprobs(value)]
    if isinstance(payload, list):
        return [found for value in payload for found in visible_logprobs(value)]
    return []


def lp_absent_because(record: dict[str, Any]) -> str:
    """The reason a record gives for having no ``lp`` value (it must have none)."""
    lp = record["components"]["lp"]
    assert lp["value"] is None and lp["label"] == "unscored" and lp["error"] is None
    return str(lp["details"]["reason"])
