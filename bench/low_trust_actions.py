"""What acting on low trust costs the client: ``streams: hold`` and an escalation, as ratios.

Run from the repository root (not part of ``make bench``; record the result in BENCHMARKS.md)::

    .venv/bin/python -m bench.low_trust_actions

Everything runs on loopback in this process: the fake upstream
(``tests.fake_upstream``, answering after ``--model-ms`` to stand for model
time and streaming its answer word by word, ``--token-ms`` after each word to
stand for generation time: without it the whole stream arrives at once, and
holding it costs the first byte nothing) and gateways built from configs
that differ only in ``on_low_trust``. Scoring is sync and deterministic — a
scorer that makes no upstream call and returns a fixed value per model group —
so the figures are the gateway's own cost of the action, not a scorer's.

Pairs, each measured one request after the other (no concurrency), baseline
and policy interleaved in rounds so that drift of a shared machine hits both:

- **hold**: a chat stream under ``streams: hold`` (a block policy whose answers
  score high, so they are kept and replayed) vs the same stream with no policy
  (sync scoring, ``streams: pass``). Time to first byte and to the last byte.
- **escalation**: a non-streamed chat whose answer scores low and is escalated
  to a second group (scoring high) vs the same request with no policy.

Printed: median and p95 of each, and each policy's median over its baseline's.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import httpx
from prometheus_client import CollectorRegistry

from proxy import create_app, settings_from_dict
from proxy.server.connections import server_options
from scoring.types import Ask, ComponentResult, Scorer, ScoringJob
from tests.fake_upstream import FakeUpstream
from tests.servers import ServerThread

MASTER_KEY = "sk-bench-master"
COMMAND = ".venv/bin/python -m bench.low_trust_actions"
QUESTION = "Name the largest planet of the solar system in one short sentence."


class FixedScorer(Scorer):
    """Trust_BC by model group, with no upstream call: the benchmark measures the action, not scoring."""

    name = "bc"

    def __init__(self, by_model: dict[str, float]) -> None:
        self.by_model = by_model

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        value = self.by_model.get(job.model, 0.9)
        return ComponentResult(component="bc", value=value, label="consistent")


def _config(upstream: str, store: Path, policy: dict[str, Any] | None) -> dict[str, Any]:
    params = {"model": "openai/gpt-4o-mini", "api_base": f"{upstream}/v1", "api_key": "sk-upstream", "timeout": 30}
    scoring: dict[str, Any] = {"mode": "sync", "sync_timeout_s": 30}
    if policy is not None:
        scoring["on_low_trust"] = policy
    return {
        "model_list": [
            {"model_name": "cheap", "litellm_params": params},
            {"model_name": "strong", "litellm_params": params},
        ],
        "router_settings": {"num_retries": 0},
        "general_settings": {"master_key": MASTER_KEY},
        "trustgate": {"scoring": scoring, "store": {"path": str(store)}},
    }


@contextmanager
def _gateway(upstream: str, store: Path, policy: dict[str, Any] | None, scores: dict[str, float]) -> Iterator[str]:
    settings = settings_from_dict(_config(upstream, store, policy), {})
    app = create_app(settings, registry=CollectorRegistry(), scorers=[FixedScorer(scores)])
    server = ServerThread(app, **server_options(settings.trustgate.server)).start()
    try:
        yield server.url
    finally:
        server.stop()


async def _stream_once(client: httpx.AsyncClient, url: str) -> tuple[float, float]:
    """Seconds to the first body byte and to the last, for one streamed chat."""
    started = time.perf_counter()
    first = None
    async with client.stream(
        "POST",
        f"{url}/v1/chat/completions",
        json={"model": "cheap", "stream": True, "messages": [{"role": "user", "content": QUESTION}]},
    ) as response:
        response.raise_for_status()
        async for _ in response.aiter_bytes():
            first = first if first is not None else time.perf_counter() - started
    return first or 0.0, time.perf_counter() - started


async def _unary_once(client: httpx.AsyncClient, url: str, expect_action: str | None) -> float:
    started = time.perf_counter()
    response = await client.post(
        f"{url}/v1/chat/completions", json={"model": "cheap", "messages": [{"role": "user", "content": QUESTION}]}
    )
    response.raise_for_status()
    if response.headers.get("x-trust-action") != expect_action:
        raise RuntimeError(f"expected x-trust-action {expect_action}, got {response.headers.get('x-trust-action')}")
    return time.perf_counter() - started


def _summary(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


async def _measure(urls: dict[str, str], requests: int, warmup: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {
        name: [] for name in ("pass_ttfb", "pass_total", "hold_ttfb", "hold_total", "plain", "escalated")
    }
    headers = {"authorization": f"Bearer {MASTER_KEY}"}
    async with httpx.AsyncClient(headers=headers, timeout=60) as client:
        for round_number in range(warmup + requests):
            pass_ttfb, pass_total = await _stream_once(client, urls["pass"])
            hold_ttfb, hold_total = await _stream_once(client, urls["hold"])
            plain = await _unary_once(client, urls["plain_low"], None)
            escalated = await _unary_once(client, urls["escalate"], "escalated")
            if round_number < warmup:
                continue
            for name, value in (
                ("pass_ttfb", pass_ttfb),
                ("pass_total", pass_total),
                ("hold_ttfb", hold_ttfb),
                ("hold_total", hold_total),
                ("plain", plain),
                ("escalated", escalated),
            ):
                results[name].append(value)
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--requests", type=int, default=200, help="measured rounds (each sends every kind once)")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--model-ms", type=float, default=50.0, help="the fake upstream's answer delay")
    parser.add_argument(
        "--token-ms",
        type=float,
        default=0.0,
        help="the fake upstream's pause after each streamed word (generation time)",
    )
    args = parser.parse_args(argv)

    fake = FakeUpstream(record=False, delay_ms=args.model_ms, token_ms=args.token_ms)
    low_then_high = {"cheap": 0.1, "strong": 0.9}
    with ServerThread(fake.app()) as upstream, TemporaryDirectory() as tmp:
        store = Path(tmp)
        with (
            _gateway(upstream.url, store / "pass.sqlite3", None, {"cheap": 0.9}) as pass_url,
            _gateway(
                upstream.url, store / "hold.sqlite3", {"action": "block", "streams": "hold"}, {"cheap": 0.9}
            ) as hold_url,
            _gateway(upstream.url, store / "plain.sqlite3", None, low_then_high) as plain_url,
            _gateway(
                upstream.url, store / "escalate.sqlite3", {"action": "escalate", "escalate_to": "strong"}, low_then_high
            ) as escalate_url,
        ):
            results = asyncio.run(
                _measure(
                    {"pass": pass_url, "hold": hold_url, "plain_low": plain_url, "escalate": escalate_url},
                    args.requests,
                    args.warmup,
                )
            )

    print(f"`{COMMAND} --requests {args.requests} --model-ms {args.model_ms:g} --token-ms {args.token_ms:g}`\n")
    print("| measure | baseline median / p95 (ms) | policy median / p95 (ms) | ratio of medians |")
    print("|---|---|---|---|")
    for label, base, policy in (
        ("stream, time to first byte: hold vs pass", "pass_ttfb", "hold_ttfb"),
        ("stream, time to last byte: hold vs pass", "pass_total", "hold_total"),
        ("low answer: escalated vs no policy", "plain", "escalated"),
    ):
        base_median, base_p95 = _summary(results[base])
        policy_median, policy_p95 = _summary(results[policy])
        print(
            f"| {label} | {base_median * 1000:.1f} / {base_p95 * 1000:.1f} | "
            f"{policy_median * 1000:.1f} / {policy_p95 * 1000:.1f} | {policy_median / base_median:.2f} |"
        )


if __name__ == "__main__":
    main()
