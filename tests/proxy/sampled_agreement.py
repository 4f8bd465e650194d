"""A gateway on which only ``sc`` scores, an upstream scripted for its samples, and a sync request to it."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import httpx

from tests.proxy.scored_gateway import AUTH, scoring_config
from tests.servers import ServerThread

QUESTION = "What is the capital of France?"


def sc_config(upstream_url: str, **scoring: Any) -> dict[str, Any]:
    """Only sc scores (no assets needed): bc, fc, lp and ev off; Trust_OV the default combination.

    Its scorer deadline is the default one (25 s), not ``scoring_config``'s 1 s (meant for scorers that hang):
    sc runs in the child scoring worker, whose first job pays that process's first calls, and these tests are
    about sc's verdicts and calls, not its time (on a slow machine one can run past 1 s).
    """
    scoring.setdefault("queue", {})
    return scoring_config(
        upstream_url,
        consistency={"enabled": False},
        factcheck={"enabled": False},
        logprob={"enabled": False},
        agreement={"enabled": False},
        sc={"enabled": True, "samples": 3},
        combine="default",
        **scoring,
    )


def scripted(first: str, samples: list[str]) -> Callable[[list[dict[str, Any]]], str]:
    """The user's call gets ``first``; the re-asks (the same messages) get ``samples`` in turn."""
    replies = itertools.chain([first], itertools.cycle(samples))
    return lambda messages: next(replies)


def ask(server: ServerThread, **extra: Any) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/chat/completions",
        headers={**AUTH, "x-trustgate-mode": "sync"},
        timeout=20,
        json={
            "model": "fake",
            "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}],
            **extra,
        },
    )
