"""Live scoring under load: what async scoring adds to user latency, and how fast answers get scored.

Run from the repository root (after ``make install``, which builds the scoring assets)::

    .venv/bin/python -m bench.scoring_load

Every server is its own process on 127.0.0.1: the fake upstream (answers after
~12 ms; its echo never picks the original option, so Trust_BC stops early, and
it is the fact-check judge too), the gateway with the real scorers (spaCy,
the embedded Oxigraph knowledge graph, word vectors, the BM25 evidence index),
Redis and ``trustgate worker`` processes. Phases, one after the other:

1. steady load, open loop at ``--rate`` requests/s: latency with scoring ``off``
   vs ``async`` (the user's added latency from scoring, which should be near zero);
2. saturation, memory queue: ``--jobs`` answers submitted at once, scored
   responses per second until the last record is final;
3. the same with the Redis Streams queue and 1, 2 and 4 worker processes;
4. gateway throughput (closed loop, async mode) with the memory queue vs the Redis queue.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import aiohttp
import httpx
import redis

from bench.harness.load import closed_loop, request_call
from bench.harness.processes import ServerProcess, free_port, running
from bench.harness.servers import GROUP, MASTER_KEY, Target, fake_upstream, model_list, write_yaml
from scoring.settings import ScoringSettings
from tests.redis_server import RedisServer

COMMAND = ".venv/bin/python -m bench.scoring_load"
DATA_DIR = ScoringSettings().data_dir  # the default data directory, where `make install` built the assets
TRUSTGATE = Path(sys.executable).with_name("trustgate")


def gateway_config(workdir: Path, upstream_port: int, port: int, queue: dict[str, object], name: str) -> Path:
    return write_yaml(
        workdir / f"{name}.yaml",
        {
            "model_list": model_list(upstream_port),
            "general_settings": {"master_key": MASTER_KEY},
            "trustgate": {
                "server": {"host": "127.0.0.1", "port": port},
                "scoring": {"data_dir": str(DATA_DIR), "mode": "async", "queue": queue, "consistency": {"seed": 1}},
                "store": {"path": str(workdir / f"{name}.sqlite3")},
            },
        },
    )


def gateway(config: Path, name: str, workdir: Path) -> ServerProcess:
    argv = [str(TRUSTGATE), "serve", "--config", str(config), "--log-level", "warning", "--no-access-log"]
    return ServerProcess(name, argv, workdir / f"{name}.log")


def worker(config: Path, index: int, workdir: Path) -> ServerProcess:
    argv = [str(TRUSTGATE), "worker", "--config", str(config), "--metrics-port", "0"]
    return ServerProcess(f"worker-{index}", argv, workdir / f"worker-{index}.log")


def wait_started(process: ServerProcess, timeout: float = 180.0) -> None:
    """A worker is ready once its scorers are loaded: it logs this line then."""
    deadline = time.monotonic() + timeout
    while "scoring worker started" not in process.log_tail():
        if time.monotonic() > deadline or (process.popen is not None and process.popen.poll() is not None):
            raise RuntimeError(f"{process.name} did not start:\n{process.log_tail()}")
        time.sleep(0.2)


async def open_loop(
    target: Target, mode: str, rate: float, seconds: float, bodies: Sequence[bytes] = ()
) -> list[float]:
    """Requests sent at a fixed rate whatever the answers do; latency of each successful one (seconds).

    ``bodies``: the request bodies to send in turn (default: the target's one body).
    """
    url = f"{target.base_url}/v1/chat/completions"
    payloads = bodies or [json.dumps(target.body(False)).encode()]
    headers = {**target.headers, "content-type": "application/json", "x-trustgate-mode": mode}
    latencies: list[float] = []

    async def one(session: aiohttp.ClientSession, payload: bytes) -> None:
        started = time.perf_counter()
        async with session.post(url, data=payload, headers=headers) as response:
            await response.read()
            if response.status == 200:
                latencies.append(time.perf_counter() - started)

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        tasks, begin = [], time.perf_counter()
        for i in range(int(rate * seconds)):
            await asyncio.sleep(max(0.0, begin + i / rate - time.perf_counter()))
            tasks.append(asyncio.create_task(one(session, payloads[i % len(payloads)])))
        await asyncio.gather(*tasks)
    return latencies


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[max(int(q * len(ordered) + 0.999) - 1, 0)]


def submit(target: Target, count: int) -> list[str]:
    """``count`` async-mode requests as fast as one client sends them; their trust ids."""
    ids = []
    with httpx.Client(timeout=30) as client:
        for i in range(count):
            response = client.post(
                f"{target.base_url}/v1/chat/completions",
                headers=target.headers,
                json={"model": GROUP, "messages": [{"role": "user", "content": f"Who wrote play number {i}?"}]},
            )
            if response.headers.get("x-trust-status") == "pending":
                ids.append(response.headers["x-trust-id"])
    return ids


def wait_final(target: Target, ids: list[str], timeout: float) -> float:
    """Seconds until every record is final (done or failed), polling the result API."""
    started, left = time.perf_counter(), set(ids)
    with httpx.Client(timeout=30) as client:
        while left and time.perf_counter() - started < timeout:
            for record_id in list(left):
                status = client.get(f"{target.base_url}/v1/trust/{record_id}", headers=target.headers).json()
                if status.get("status") in ("done", "failed"):
                    left.discard(record_id)
            time.sleep(0.1)
    if left:
        raise RuntimeError(f"{len(left)} of {len(ids)} records not final after {timeout:.0f}s")
    return time.perf_counter() - started


def scored_per_second(target: Target, jobs: int) -> tuple[float, float]:
    """Scored responses per second at saturation, and the mean upstream calls per scored answer."""
    begin = time.perf_counter()
    ids = submit(target, jobs)
    wait_final(target, ids, timeout=600)
    elapsed = time.perf_counter() - begin
    with httpx.Client(timeout=30) as client:
        calls = [
            sum(
                c["upstream_calls"]
                for c in client.get(f"{target.base_url}/v1/trust/{i}", headers=target.headers)
                .json()["components"]
                .values()
            )
            for i in ids
        ]
    return len(ids) / elapsed, statistics.mean(calls)


@contextlib.contextmanager
def started_gateway(config: Path, name: str, port: int, workdir: Path) -> Iterator[Target]:
    with running(gateway(config, name, workdir), f"http://127.0.0.1:{port}/health/liveness", timeout=180):
        yield Target(name, f"http://127.0.0.1:{port}", MASTER_KEY, GROUP)


def steady_rows(target: Target, queue: str, args: argparse.Namespace) -> list[str]:
    """Scoring off, then async, twice over, at the same fixed rate."""
    asyncio.run(open_loop(target, "off", args.rate, 3))  # warm-up
    rows = []
    for mode in ("off", "async", "off", "async"):
        latencies = asyncio.run(open_loop(target, mode, args.rate, args.seconds))
        rows.append(f"| {queue} | {mode} | {len(latencies)} | {pct(latencies, 0.5):.1f} | {pct(latencies, 0.99):.1f} |")
        time.sleep(5)  # let the async phase's scoring drain before the next phase
    return rows


def assets_ready() -> bool:
    """Whether the scoring assets the benchmarks' gateways load are built; says how to build them if not."""
    if (DATA_DIR / "factcheck" / "index").exists():
        return True
    print("scoring assets missing: run `make install` first", file=sys.stderr)
    return False


def throughput(target: Target, seconds: float) -> float:
    call = request_call(target, stream=False)
    asyncio.run(closed_loop(call, 10, 2))
    tally, elapsed = asyncio.run(closed_loop(call, 10, seconds))
    return len(tally.latencies) / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=5.0, help="steady-load requests per second")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each steady-load phase")
    parser.add_argument("--jobs", type=int, default=120, help="answers submitted in each saturation phase")
    args = parser.parse_args()
    if not assets_ready():
        return 2
    lines = [f"Command: `{COMMAND}` (rate {args.rate}/s, {args.seconds:.0f} s phases, {args.jobs} jobs)", ""]
    with tempfile.TemporaryDirectory(prefix="trustgate-scoring-bench-") as tmp:
        workdir = Path(tmp)
        upstream_port = free_port()
        with running(fake_upstream(upstream_port, 12.0, workdir), f"http://127.0.0.1:{upstream_port}/v1/models"):
            port = free_port()
            memory = gateway_config(workdir, upstream_port, port, {"max_size": 10000, "concurrency": 4}, "memory")
            steady = ["| queue | scoring | requests | p50 (ms) | p99 (ms) |", "|---|---|---:|---:|---:|"]
            saturation = ["| queue | workers | scored/s | upstream calls per scored answer |", "|---|---:|---:|---:|"]
            throughputs = ["| queue | req/s |", "|---|---:|"]
            with started_gateway(memory, "memory", port, workdir) as target:
                print("memory queue: steady load, saturation, throughput", flush=True)
                steady += steady_rows(target, "memory", args)
                rate, calls = scored_per_second(target, args.jobs)
                saturation.append(f"| memory | in-process | {rate:.2f} | {calls:.2f} |")
                throughputs.append(f"| memory (scoring in-process) | {throughput(target, args.seconds):.1f} |")
            redis_server = RedisServer(workdir).start()
            try:
                base = None
                for count in (1, 2, 4):
                    redis.Redis.from_url(redis_server.url).flushall()
                    config = gateway_config(
                        workdir,
                        upstream_port,
                        port,
                        {"backend": "redis", "redis_url": redis_server.url, "max_size": 10000, "concurrency": 4},
                        f"redis-{count}",
                    )
                    with contextlib.ExitStack() as stack:
                        target = stack.enter_context(started_gateway(config, f"redis-{count}", port, workdir))
                        for i in range(count):
                            process = worker(config, i, workdir).start()
                            stack.callback(process.stop)
                            wait_started(process)
                        print(f"redis queue, {count} workers", flush=True)
                        if count == 1:
                            steady += steady_rows(target, "redis (1 worker)", args)
                        rate, calls = scored_per_second(target, args.jobs)
                        base = base or rate
                        saturation.append(f"| redis | {count} | {rate:.2f} (×{rate / base:.2f}) | {calls:.2f} |")
                        if count == 1:
                            throughputs.append(f"| redis (1 worker process) | {throughput(target, args.seconds):.1f} |")
            finally:
                redis_server.stop()
            lines += [
                "User latency at a steady open-loop load, scoring off vs async:",
                "",
                *steady,
                "",
                f"Scored responses per second at saturation ({args.jobs} answers submitted at once):",
                "",
                *saturation,
                "",
                "Gateway throughput, closed loop (10 clients, async mode):",
                "",
                *throughputs,
            ]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
