"""Sync requests sent right after a burst of async ones, on a running gateway: do they still get their score?

Five async requests arrive at once, and their scoring jobs queue; then sync
requests (ten unless told), one after the other, each waiting for its own answer's score. With
sync first (``scoring.lanes``, ``proxy.upstream.slots``) each sync job goes ahead of the
async backlog, so its client gets ``done`` within ``sync_timeout_s`` rather than
``pending``. Shared by the end-to-end test and ``bench.embedded_default``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx

from tests.e2e.gateway_process import AUTH

ASYNC_QUESTIONS = [
    "Who invented the telephone?",
    "What is the capital of Italy?",
    "Who wrote Hamlet?",
    "What is the smallest prime number?",
    "Which ocean is the largest?",
]
SYNC_QUESTIONS = [
    "What is the capital of France?",
    "Who wrote Romeo and Juliet?",
    "What is the largest planet in the solar system?",
    "Who painted the Mona Lisa?",
    "What is the chemical symbol for gold?",
    "What is the capital of Japan?",
    "Who discovered penicillin?",
    "What is the longest river in Africa?",
    "Who was the first president of the United States?",
    "What language is spoken in Brazil?",
]


@dataclass(frozen=True)
class SyncReply:
    question: str
    status: str  # x-trust-status: done, or pending when sync_timeout_s passed first
    seconds: float
    record_id: str


@dataclass(frozen=True)
class SyncAfterAsync:
    sync: list[SyncReply]
    async_ids: list[str]

    @property
    def done(self) -> int:
        return sum(reply.status == "done" for reply in self.sync)


def ask(url: str, question: str, mode: str) -> tuple[httpx.Response, float]:
    """One short chat question to the embedded default's model in ``mode``: the response and how long it took."""
    started = time.perf_counter()
    response = httpx.post(
        f"{url}/v1/chat/completions",
        headers={**AUTH, "x-trustgate-mode": mode},
        timeout=300,
        json={
            "model": "local",
            "messages": [{"role": "user", "content": question}],
            "max_tokens": 32,
            "temperature": 0,
        },
    )
    response.raise_for_status()
    return response, time.perf_counter() - started


def sync_after_async(url: str, sync_questions: Sequence[str] = SYNC_QUESTIONS) -> SyncAfterAsync:
    with ThreadPoolExecutor(len(ASYNC_QUESTIONS)) as pool:
        backlog = list(pool.map(lambda q: ask(url, q, "async")[0].headers["x-trust-id"], ASYNC_QUESTIONS))
    replies = []
    for question in sync_questions:
        response, seconds = ask(url, question, "sync")
        replies.append(
            SyncReply(question, response.headers.get("x-trust-status", "none"), seconds, response.headers["x-trust-id"])
        )
    return SyncAfterAsync(replies, backlog)


def wait_all_final(url: str, record_ids: list[str], timeout: float = 600) -> list[dict[str, Any]]:
    """The records once none is pending (or the timeout passed): async jobs are delayed, never lost."""
    deadline = time.monotonic() + timeout
    while True:
        records = [httpx.get(f"{url}/v1/trust/{i}", headers=AUTH, timeout=30).json() for i in record_ids]
        if all(r["status"] != "pending" for r in records) or time.monotonic() > deadline:
            return records
        time.sleep(0.5)


def overtaken(url: str) -> float:
    """``trustgate_scoring_async_overtaken_total``: async jobs passed by sync ones so far."""
    text = httpx.get(f"{url}/metrics", timeout=10).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("trustgate_scoring_async_overtaken_total ")
    )
