"""The trust record store at size: look-ups and writes with 1M records present, and a gateway under load at 200k.

Run from the repository root (``make bench-store`` does)::

    .venv/bin/python -m bench.store_load

Two parts, one after the other:

1. ``store`` — the SQLite store in this process, prefilled with ``--store-records``
   (1M) rows by a bulk insert, at its ``max_records`` bound so that every write
   batch also prunes: look-up latency with the store idle; then a closed loop of
   ``--writers`` concurrent writers for ``--store-seconds`` with readers beside
   them (write throughput, look-up latency during writes, rows held at the end).
   For comparison the naive prune statement (``DELETE … WHERE id NOT IN (SELECT …
   LIMIT max_records)``, as a store pruning every 100 writes would run it) is timed
   once on the same table.
2. ``gateway`` — ``trustgate``'s app in its own process (``--serve`` below), on the
   pass-through path in front of the fake upstream, its store prefilled with
   ``--gateway-records`` (200k) rows. Scoring is async with one scorer that does
   no work (it copies the question and answer into its details), so that the
   load falls on what this benchmark is about: the scoring queue, the record
   writes and the look-ups, not on model time. ``--clients`` (50) clients each
   send a chat completion and then look up a record (a prefilled one or one of
   theirs, alternately) for ``--gateway-seconds`` (60). The gateway is then
   stopped with SIGTERM (its queue drains), and every trust id a client was
   given is checked in the database: a record missing there is lost; records
   there but not ``done`` are counted by status.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import httpx

from bench.harness.cpu import machine_busy_seconds
from bench.harness.processes import ServerProcess, free_port, running
from bench.harness.servers import GROUP, MASTER_KEY, fake_upstream, model_list, write_yaml
from exporters.store import SqliteRecordStore
from scoring.types import Ask, ComponentResult, RecordScope, Scorer, ScoringJob, TrustRecord

EVERYONE = RecordScope.everyone()  # the store read as the master key reads it

COMMAND = ".venv/bin/python -m bench.store_load"
OLD_PRUNE = "DELETE FROM trust_records WHERE id NOT IN (SELECT id FROM trust_records ORDER BY created_at DESC LIMIT ?)"


# A record shaped like the real scorers' (three Trust_BC checks, two evidence passages).
CHECK = {
    "options": ["Paris", "Lyon", "Nice", "Metz"],
    "chosen": "A",
    "original": "A",
    "consistent": True,
    "original_probability": None,
    "reply": "A",
}
EVIDENCE = [
    {"id": "wiki:Paris#0", "title": "Paris", "score": 7.1},
    {"id": "wiki:France#3", "title": "France", "score": 5.2},
]


def sample_record(record_id: str, created_at: float) -> TrustRecord:
    """A record shaped like a scored one (about 700 bytes of JSON)."""
    return TrustRecord(
        id=record_id,
        status="done",
        model=GROUP,
        score=0.62,
        label="uncertain",
        created_at=created_at,
        finished_at=created_at + 1.5,
        timings={"queued_s": 0.01, "scoring_s": 1.49},
        components={
            "bc": ComponentResult(
                component="bc", value=0.8, label="consistent", upstream_calls=3, details={"checks": [CHECK] * 3}
            ),
            "fc": ComponentResult(
                component="fc",
                value=0.4,
                label="neutral",
                upstream_calls=1,
                details={"evidence": EVIDENCE, "judge": "llm", "label": "neutral"},
            ),
        },
    )


def prefill(path: Path, count: int) -> None:
    """``count`` records, oldest first, by one executemany per 50k rows straight into the store's table."""

    async def create_schema() -> None:
        store = SqliteRecordStore(path, max_age_s=1, max_records=1)
        await store.open()
        await store.close()

    asyncio.run(create_schema())
    template = sample_record("__ID__", 0.0).model_dump_json()
    start = time.time() - count * 0.001
    db = sqlite3.connect(path)
    for first in range(0, count, 50_000):
        rows = [
            (f"prefill-{i}", start + i * 0.001, template.replace("__ID__", f"prefill-{i}"))
            for i in range(first, min(first + 50_000, count))
        ]
        with db:
            db.executemany("INSERT INTO trust_records (id, created_at, record) VALUES (?, ?, ?)", rows)
    db.close()


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def ms(values: Sequence[float], q: float) -> str:
    return f"{percentile(values, q) * 1000:.1f}"


# --------------------------------------------------------------------------- part 1: the store


@dataclass
class StoreResult:
    rows: int
    prefill_s: float
    idle_lookups: list[float]
    writes: int
    write_seconds: float
    busy_lookups: list[float]
    rows_after: int
    shed: int
    old_prune_s: float


async def _store_phase(path: Path, rows: int, writers: int, seconds: float) -> StoreResult:
    shed: list[int] = []
    store = SqliteRecordStore(path, max_age_s=30 * 86400, max_records=rows, on_shed=lambda: shed.append(1))
    await store.open()
    ids = [f"prefill-{random.randrange(rows)}" for _ in range(3000)]
    idle: list[float] = []
    for record_id in ids:
        started = time.perf_counter()
        assert await store.get(record_id, scope=EVERYONE) is not None
        idle.append(time.perf_counter() - started)

    written = 0
    busy: list[float] = []
    deadline = time.perf_counter() + seconds

    async def writer(worker: int) -> None:
        nonlocal written
        n = 0
        while time.perf_counter() < deadline:
            await store.put(sample_record(f"bench-{worker}-{n}", time.time()))
            n += 1
            written += 1

    async def reader() -> None:
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            await store.get(random.choice(ids), scope=EVERYONE)  # may be pruned by now: the latency is what counts
            busy.append(time.perf_counter() - started)
            await asyncio.sleep(0.002)

    begin = time.perf_counter()
    await asyncio.gather(*(writer(i) for i in range(writers)), *(reader() for _ in range(4)))
    elapsed = time.perf_counter() - begin
    rows_after = await store.count()
    await store.close()
    return StoreResult(
        rows=rows,
        prefill_s=0.0,
        idle_lookups=idle,
        writes=written,
        write_seconds=elapsed,
        busy_lookups=busy,
        rows_after=rows_after,
        shed=len(shed),
        old_prune_s=0.0,
    )


def run_store(workdir: Path, rows: int, writers: int, seconds: float) -> StoreResult:
    path = workdir / "store.sqlite3"
    began = time.perf_counter()
    prefill(path, rows)
    prefill_s = time.perf_counter() - began
    result = asyncio.run(_store_phase(path, rows, writers, seconds))
    db = sqlite3.connect(path)
    began = time.perf_counter()
    with db:
        db.execute(OLD_PRUNE, (rows,))
    result.old_prune_s = time.perf_counter() - began
    db.close()
    result.prefill_s = prefill_s
    return result


def store_report(r: StoreResult, writers: int) -> str:
    return "\n".join(
        [
            f"Store with {r.rows:,} records present (prefilled in {r.prefill_s:.1f} s by executemany), at its "
            f"max_records bound so every write batch prunes too:",
            "",
            "| measure | value |",
            "|---|---|",
            f"| look-up, store idle (3,000 sequential) p50 / p99 | {ms(r.idle_lookups, 0.5)} / "
            f"{ms(r.idle_lookups, 0.99)} ms |",
            f"| writes, {writers} concurrent writers, {r.write_seconds:.0f} s | {r.writes / r.write_seconds:,.0f} "
            f"records/s ({r.writes:,} written, {r.shed} shed) |",
            f"| look-up during those writes ({len(r.busy_lookups):,}) p50 / p99 / max | {ms(r.busy_lookups, 0.5)} / "
            f"{ms(r.busy_lookups, 0.99)} / {ms(r.busy_lookups, 1.0)} ms |",
            f"| rows held after the writes (bound {r.rows:,}) | {r.rows_after:,} |",
            f"| the old prune statement (`NOT IN (SELECT … LIMIT)`), once, same table | {r.old_prune_s:.2f} s |",
        ]
    )


# --------------------------------------------------------------------------- part 2: the gateway


class CopyingScorer(Scorer):
    """Scores nothing: copies the question and answer into its details, so records have their real shape."""

    name = "fc"

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        return ComponentResult(
            component="fc", value=0.5, label="neutral", details={"question": job.question, "answer": job.answer}
        )


def serve(config: Path) -> None:
    """The gateway process of part 2: the real app with the copying scorer (``--serve CONFIG``)."""
    import uvicorn

    from proxy import create_app
    from proxy.config.settings import load_settings
    from proxy.server.connections import server_options

    settings = load_settings(config)
    server = settings.trustgate.server
    uvicorn.run(
        create_app(settings, scorers=[CopyingScorer()]),
        host=server.host,
        port=server.port,
        log_level="warning",
        access_log=False,
        **server_options(server),
    )


@dataclass
class GatewayTally:
    trust_ids: list[str] = field(default_factory=list)
    chat_latencies: list[float] = field(default_factory=list)
    lookups: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


async def _client(
    session: aiohttp.ClientSession, base: str, prefilled: int, deadline: float, tally: GatewayTally
) -> None:
    headers = {"authorization": f"Bearer {MASTER_KEY}", "content-type": "application/json"}
    own: list[str] = []
    turn = 0
    while time.perf_counter() < deadline:
        turn += 1
        body = json.dumps({"model": GROUP, "messages": [{"role": "user", "content": f"Question {turn}?"}]})
        started = time.perf_counter()
        try:
            async with session.post(f"{base}/v1/chat/completions", data=body, headers=headers) as response:
                await response.read()
                trust_id = response.headers.get("x-trust-id")
                if response.status != 200 or trust_id is None:
                    tally.error(f"chat {response.status}")
                    continue
        except (TimeoutError, aiohttp.ClientError) as exc:
            tally.error(f"chat {type(exc).__name__}")
            continue
        tally.chat_latencies.append(time.perf_counter() - started)
        tally.trust_ids.append(trust_id)
        own.append(trust_id)
        target = random.choice(own) if turn % 2 else f"prefill-{random.randrange(prefilled)}"
        started = time.perf_counter()
        try:
            async with session.get(f"{base}/v1/trust/{target}", headers=headers) as response:
                await response.read()
                if response.status != 200:
                    tally.error(f"lookup {response.status}")
                    continue
        except (TimeoutError, aiohttp.ClientError) as exc:
            tally.error(f"lookup {type(exc).__name__}")
            continue
        tally.lookups.append(time.perf_counter() - started)


async def _load(base: str, clients: int, prefilled: int, seconds: float) -> tuple[GatewayTally, float]:
    tally = GatewayTally()
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as session:
        begin = time.perf_counter()
        await asyncio.gather(*(_client(session, base, prefilled, begin + seconds, tally) for _ in range(clients)))
        return tally, time.perf_counter() - begin


@dataclass
class GatewayResult:
    prefilled: int
    clients: int
    seconds: float
    tally: GatewayTally
    lost: int
    not_done: dict[str, int]
    shed_writes: float
    gateway_cpu_s: float
    other_cores: float


def run_gateway(workdir: Path, clients: int, prefilled: int, seconds: float) -> GatewayResult:
    store_path = workdir / "gateway.sqlite3"
    prefill(store_path, prefilled)
    upstream_port, port = free_port(), free_port()
    config = write_yaml(
        workdir / "gateway.yaml",
        {
            "model_list": model_list(upstream_port),
            "general_settings": {"master_key": MASTER_KEY},
            "trustgate": {
                "server": {"host": "127.0.0.1", "port": port},
                # More concurrent jobs than the default 4: on a saturated event loop each job takes a few
                # loop turns, and 4 at a time would shed scoring jobs before the store is tested.
                "scoring": {"mode": "async", "queue": {"concurrency": 16, "shutdown_grace_s": 20}},
                "store": {"path": str(store_path)},
            },
        },
    )
    gateway = ServerProcess(
        "trustgate", [sys.executable, "-m", "bench.store_load", "--serve", str(config)], workdir / "gateway.log"
    )
    base = f"http://127.0.0.1:{port}"
    with running(fake_upstream(upstream_port, 12.0, workdir), f"http://127.0.0.1:{upstream_port}/v1/models"):
        with running(gateway, f"{base}/health/liveness"):
            cpu_before, busy_before, own_before = gateway.cpu_seconds(), machine_busy_seconds(), _own_cpu_s()
            tally, elapsed = asyncio.run(_load(base, clients, prefilled, seconds))
            gateway_cpu = gateway.cpu_seconds() - cpu_before
            # What other programs used: the whole machine minus the gateway, the upstream and this process.
            other = (machine_busy_seconds() - busy_before - gateway_cpu - (_own_cpu_s() - own_before)) / elapsed
            metrics = httpx.get(f"{base}/metrics").text
    shed = sum(
        float(line.split()[-1]) for line in metrics.splitlines() if line.startswith("trustgate_store_shed_writes_total")
    )
    db = sqlite3.connect(store_path)
    not_done: dict[str, int] = {}
    lost = 0
    for trust_id in tally.trust_ids:
        row = db.execute("SELECT record FROM trust_records WHERE id = ?", (trust_id,)).fetchone()
        if row is None:
            lost += 1
        elif (status := json.loads(row[0])["status"]) != "done":
            not_done[status] = not_done.get(status, 0) + 1
    db.close()
    return GatewayResult(prefilled, clients, elapsed, tally, lost, not_done, shed, gateway_cpu, other)


def _own_cpu_s() -> float:
    """This process's CPU (the load generator), with the fake upstream's, which it does not own, left to 'other'."""
    return time.process_time()


def gateway_report(r: GatewayResult) -> str:
    t = r.tally
    return "\n".join(
        [
            f"Gateway (pass-through, async scoring with a scorer that does no work) with {r.prefilled:,} records "
            f"present, {r.clients} concurrent clients for {r.seconds:.0f} s, each sending a chat completion and then "
            "a look-up (a prefilled record and one of its own, alternately); then SIGTERM:",
            "",
            "| measure | value |",
            "|---|---|",
            f"| chat completions answered | {len(t.chat_latencies):,} ({len(t.chat_latencies) / r.seconds:,.0f}/s), "
            f"p50 / p99 {ms(t.chat_latencies, 0.5)} / {ms(t.chat_latencies, 0.99)} ms |",
            f"| look-ups `GET /v1/trust/{{id}}` | {len(t.lookups):,}, p50 / p99 / max {ms(t.lookups, 0.5)} / "
            f"{ms(t.lookups, 0.99)} / {ms(t.lookups, 1.0)} ms |",
            f"| errors seen by clients | {t.errors or 'none'} |",
            f"| trust ids handed out / lost (not in the store after shutdown) | {len(t.trust_ids):,} / {r.lost} |",
            f"| records not `done` (by status: a shed scoring job is recorded, not lost) | {r.not_done or 'none'} |",
            f"| store writes shed (`trustgate_store_shed_writes_total`) | {r.shed_writes:.0f} |",
            f"| gateway CPU per chat completion (with its look-up and record) | "
            f"{r.gateway_cpu_s * 1000 / max(len(t.chat_latencies), 1):.1f} ms |",
            f"| CPU used by other programs (and the fake upstream) during the load | {r.other_cores:.2f} cores |",
        ]
    )


# --------------------------------------------------------------------------- main


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.store_load", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--part", choices=["store", "gateway", "both"], default="both")
    parser.add_argument("--store-records", type=int, default=1_000_000)
    parser.add_argument("--writers", type=int, default=64)
    parser.add_argument("--store-seconds", type=float, default=15.0)
    parser.add_argument("--gateway-records", type=int, default=200_000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--gateway-seconds", type=float, default=60.0)
    parser.add_argument("--serve", metavar="CONFIG", help=argparse.SUPPRESS)  # the gateway process of part 2
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch at the gateway's start
    if args.serve:
        serve(Path(args.serve))
        return 0
    sections = [f"Command: `{COMMAND}{' ' + ' '.join(argv or sys.argv[1:]) if (argv or sys.argv[1:]) else ''}`"]
    with tempfile.TemporaryDirectory(prefix="trustgate-store-bench-") as tmp:
        workdir = Path(tmp)
        if args.part in ("store", "both"):
            result = run_store(workdir, args.store_records, args.writers, args.store_seconds)
            sections.append(store_report(result, args.writers))
            print(sections[-1], flush=True)
        if args.part in ("gateway", "both"):
            sections.append(
                gateway_report(run_gateway(workdir, args.clients, args.gateway_records, args.gateway_seconds))
            )
            print(sections[-1], flush=True)
    print("\n\n".join(sections))
    return 0


if __name__ == "__main__":
    sys.exit(main())
