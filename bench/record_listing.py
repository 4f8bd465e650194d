"""GET /v1/trust page by page over 10,000 stored records, on the SQLite and the Redis store.

Run from the repository root::

    .venv/bin/python -m bench.record_listing [--records 10000]

Each store is filled with ``--records`` records shaped like the real scorers'
(3 Trust_BC checks of 5 options, 10 evidence passages with snippets, Trust_OV;
about 6 KB of JSON each), spread over the last 24 hours, half owned by each of
two keys, a third labelled untrusted. A gateway (uvicorn on a loopback socket,
in a thread of this process, so the client shares its CPU) serves them; a
client walks every page of each listing by its cursor and times each request.
Printed as a markdown table: pages, median / p95 / max milliseconds per page,
and the time of one ``/v1/trust/summary`` over the whole day.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from prometheus_client import CollectorRegistry
from redis.asyncio import Redis

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from exporters.redis_store import RedisRecordStore
from exporters.store import SqliteRecordStore
from proxy import create_app, settings_from_dict
from scoring.types import ComponentResult, TrustRecord
from tests.redis_server import RedisServer
from tests.servers import ServerThread

MASTER = "sk-bench-master"
KEYS = [{"key": "sk-bench-a", "name": "team-a"}, {"key": "sk-bench-b", "name": "team-b"}]
LISTINGS: list[tuple[str, str, dict[str, Any]]] = [
    ("all, 50 a page", MASTER, {"limit": 50}),
    ("all, 200 a page", MASTER, {"limit": 200}),
    ("label=untrusted", MASTER, {"label": "untrusted", "limit": 50}),
    ("one key's own (team-a)", "sk-bench-a", {"limit": 50}),
    ("model + Trust_BC ≤ 0.5", MASTER, {"model": "model-1", "score_of": "bc", "max_score": 0.5, "limit": 50}),
]


def realistic_record(i: int, now: float, count: int) -> TrustRecord:
    """A record shaped as the real scorers write one (tests/e2e/test_trust_scores.py shows the real thing)."""
    consistent = i % 3 != 0
    checks = [
        {
            "options": [f"Option {k} for answer {i}: a sentence the size of a real answer." for k in range(4)]
            + ["None of the above."],
            "original": "B",
            "chosen": "B" if consistent else "C",
            "consistent": consistent,
            "original_probability": None,
            "reply": "B" if consistent else "C",
        }
        for _ in range(3)
    ]
    evidence = [
        {
            "id": f"wikipedia:Page{i}-{k}",
            "title": f"Page {k}",
            "score": 20.0 - k,
            "snippet": "A passage of evidence text, kept to three hundred characters in the record. " * 4,
        }
        for k in range(10)
    ]
    score = 0.9 if consistent else 0.1
    return TrustRecord(
        id=f"trust-{i:08d}",
        status="done",
        model=f"model-{i % 4}",
        owner=KEYS[i % 2]["name"],
        score=score,
        label="trusted" if consistent else "untrusted",
        created_at=now - 86_000 * (count - i) / count,
        question=f"Question number {i}: what is the capital of somewhere?",
        answer="An answer of one sentence.",
        components={
            "bc": ComponentResult(
                component="bc",
                value=1.0 if consistent else 0.0,
                upstream_calls=3,
                details={
                    "mode": "adaptive",
                    "graded": 1.0 if consistent else 0.0,
                    "stop_reason": "settled",
                    "checks": checks,
                },
            ),
            "fc": ComponentResult(
                component="fc",
                value=score,
                label="support",
                upstream_calls=1,
                details={
                    "query": "q",
                    "judge": "llm",
                    "label": "support",
                    "evidence": evidence,
                    "label_probs": {"support": 1.0, "neutral": 0.0, "contradict": 0.0},
                },
            ),
            "ov": ComponentResult(component="ov", value=score, details={"source": "bc+fc", "table3": score}),
        },
    )


async def fill(store: SqliteRecordStore | RedisRecordStore, count: int) -> None:
    now = time.time()
    for i in range(count):
        await store.put(realistic_record(i, now, count))


def walk(url: str, key: str, params: dict[str, Any]) -> tuple[int, list[float]]:
    """Every page of one listing; (records seen, seconds per page)."""
    seen, timings, cursor = 0, [], None
    with httpx.Client(base_url=url, headers={"authorization": f"Bearer {key}"}, timeout=60) as client:
        while True:
            started = time.perf_counter()
            response = client.get("/v1/trust", params={**params, **({"cursor": cursor} if cursor else {})})
            timings.append(time.perf_counter() - started)
            body = response.raise_for_status().json()
            seen += len(body["data"])
            cursor = body["next_cursor"]
            if cursor is None:
                return seen, timings


def summary_seconds(url: str) -> float:
    started = time.perf_counter()
    httpx.get(f"{url}/v1/trust/summary", headers={"authorization": f"Bearer {MASTER}"}, timeout=60).raise_for_status()
    return time.perf_counter() - started


def measure(store_name: str, config: dict[str, Any]) -> list[str]:
    app = create_app(settings_from_dict(config, {}), registry=CollectorRegistry(), scorers=[])
    rows = []
    with ServerThread(app) as server:
        for name, key, params in LISTINGS:
            seen, timings = walk(server.url, key, params)
            ms = sorted(t * 1000 for t in timings)
            p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
            rows.append(
                f"| {store_name} | {name} | {seen} | {len(ms)} | {statistics.median(ms):.1f} | {p95:.1f} "
                f"| {ms[-1]:.1f} |"
            )
        rows.append(f"| {store_name} | summary, 24 h | all | 1 | {summary_seconds(server.url) * 1000:.1f} | | |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=10_000)
    options = parser.parse_args()
    base: dict[str, Any] = {
        "model_list": [
            {
                "model_name": "model-0",
                "litellm_params": {
                    "model": "openai/gpt-4o-mini",
                    "api_base": "http://127.0.0.1:9/v1",
                    "api_key": "unused",
                },
            }
        ],
        "general_settings": {"master_key": MASTER},
    }
    rows = ["| store | listing | records | pages | median ms/page | p95 | max |", "|---|---|---:|---:|---:|---:|---:|"]
    with tempfile.TemporaryDirectory() as workdir:
        path = Path(workdir) / "records.sqlite3"

        async def fill_sqlite() -> None:
            store = SqliteRecordStore(path, max_age_s=7 * 86400, max_records=1_000_000)
            await store.open()
            await fill(store, options.records)
            await store.close()

        asyncio.run(fill_sqlite())
        rows += measure("sqlite", {**base, "trustgate": {"keys": KEYS, "store": {"path": str(path)}}})

        redis_server = RedisServer(Path(workdir)).start()
        try:

            async def fill_redis() -> None:
                redis = Redis.from_url(redis_server.url, decode_responses=True)
                await fill(RedisRecordStore(redis, prefix="trustgate", ttl_s=7 * 86400), options.records)
                await redis.aclose()

            asyncio.run(fill_redis())
            rows += measure(
                "redis",
                {
                    **base,
                    "trustgate": {
                        "keys": KEYS,
                        "scoring": {"queue": {"backend": "redis", "redis_url": redis_server.url}},
                    },
                },
            )
        finally:
            redis_server.stop()
    print(f"{options.records} records, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
