"""The load generator: a closed loop of workers, each sending its next request when its last is answered.

Its options (``add_load_options``) are shared by every benchmark that drives a gateway with it, and
``LoadResult`` is what one measured phase against one target gives.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import aiohttp

from .servers import UPSTREAM_DELAY_MS, UPSTREAM_JITTER_MS, Target

__all__ = [
    "ROUND_WARMUP_SECONDS",
    "Call",
    "LoadResult",
    "Options",
    "Tally",
    "add_load_options",
    "closed_loop",
    "load_options",
    "request_call",
]

# Warm-up before each round after the first: the closed loop opens new connections each phase.
ROUND_WARMUP_SECONDS = 1.0


@dataclass
class LoadResult:
    """One measured phase against one target."""

    target: str
    stream: bool
    seconds: float
    latencies: list[float]  # seconds, successful requests only
    errors: int
    cpu: dict[str, float] = field(default_factory=dict)  # role -> CPU seconds during the phase

    @property
    def other_cores(self) -> float:
        """Average cores used by programs outside the benchmark while this phase ran."""
        return self.cpu.get("other", math.nan) / self.seconds if self.seconds > 0 else math.nan

    @property
    def throughput(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds > 0 else 0.0

    def percentile_ms(self, q: float) -> float:
        """Nearest-rank percentile: no interpolation, so every figure is an observed latency."""
        if not self.latencies:
            return math.nan
        ordered = sorted(self.latencies)
        return 1000 * ordered[max(math.ceil(q * len(ordered)) - 1, 0)]

    def cpu_ms_per_request(self, role: str) -> float:
        if role not in self.cpu or not self.latencies:
            return math.nan
        return 1000 * self.cpu[role] / len(self.latencies)

    @classmethod
    def combined(cls, parts: Sequence[LoadResult]) -> LoadResult:
        """Several phases of one target and mode as one: their requests, seconds and CPU added up."""
        cpu: dict[str, float] = {}
        for part in parts:
            for role, seconds in part.cpu.items():
                cpu[role] = cpu.get(role, 0.0) + seconds
        return cls(
            parts[0].target,
            parts[0].stream,
            sum(p.seconds for p in parts),
            [latency for p in parts for latency in p.latencies],
            sum(p.errors for p in parts),
            cpu,
        )


@dataclass(frozen=True)
class Options:
    """What one run does; see ``--help`` for each."""

    concurrency: int
    warmup: float
    seconds: float
    stream_seconds: float
    delay_ms: float
    noise_budget: float
    rounds: int = 1
    delay_jitter_ms: float = 0.0

    @property
    def upstream_delay(self) -> str:
        """The fake upstream's answer time as the report and the committed figures name it."""
        if not self.delay_jitter_ms:
            return f"{self.delay_ms:g} ms"
        return f"{self.delay_ms:g} ± {self.delay_jitter_ms:g} ms (uniform, seeded)"

    def one_round(self, first: bool) -> Options:
        """What one of ``rounds`` alternating phases measures: its share of the seconds, and a full
        warm-up only the first time (later rounds just open their connections again)."""
        return dataclasses.replace(
            self,
            warmup=self.warmup if first else min(self.warmup, ROUND_WARMUP_SECONDS),
            seconds=self.seconds / self.rounds,
            stream_seconds=self.stream_seconds / self.rounds,
        )


Call = Callable[[aiohttp.ClientSession], Awaitable[bool]]


def request_call(target: Target, stream: bool) -> Call:
    """One request, answered in full (for a stream: read to its end, checked for ``[DONE]``).

    The body is serialised once: the load generator shares the CPU with the
    servers it measures, so it does as little per request as it can.
    """
    url = f"{target.base_url}/v1/chat/completions"
    payload = json.dumps(target.body(stream)).encode()
    headers = {**target.headers, "content-type": "application/json"}

    async def plain(session: aiohttp.ClientSession) -> bool:
        async with session.post(url, data=payload, headers=headers) as response:
            return response.status == 200 and b'"choices"' in await response.read()

    async def streamed(session: aiohttp.ClientSession) -> bool:
        async with session.post(url, data=payload, headers=headers) as response:
            tail = b""
            async for chunk in response.content.iter_any():
                tail = (tail + chunk)[-64:]
            return response.status == 200 and b"[DONE]" in tail

    return streamed if stream else plain


@dataclass
class Tally:
    """What the workers of one closed loop share: latencies of successes, and failures."""

    latencies: list[float] = field(default_factory=list)
    errors: int = 0


async def _worker(session: aiohttp.ClientSession, call: Call, deadline: float, tally: Tally, max_errors: int) -> None:
    while (started := time.perf_counter()) < deadline and tally.errors < max_errors:
        try:
            ok = await call(session)
        except (TimeoutError, aiohttp.ClientError):
            ok = False
        if ok:
            tally.latencies.append(time.perf_counter() - started)
        else:
            tally.errors += 1


async def closed_loop(call: Call, concurrency: int, seconds: float) -> tuple[Tally, float]:
    """``concurrency`` workers, each sending its next request as soon as its last one is answered.

    Returns the tally and the elapsed seconds. Requests still in flight at the
    deadline finish and count: the elapsed time includes them. A worker stops
    early after 100 failures, so a broken target cannot spin.
    aiohttp rather than httpx: about a third of httpx's client CPU per request
    (0.3 vs 1 ms here), which on two cores is CPU left to the servers measured.
    """
    tally = Tally()
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=30)) as session:
        begin = time.perf_counter()
        deadline = begin + seconds
        await asyncio.gather(*(_worker(session, call, deadline, tally, max_errors=100) for _ in range(concurrency)))
        elapsed = time.perf_counter() - begin
    return tally, elapsed


def add_load_options(parser: argparse.ArgumentParser) -> None:
    """The options of the load itself, shared with the benchmarks that reuse this one's closed loop."""
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds of warm-up per target")
    parser.add_argument("--seconds", type=float, default=20.0, help="measured seconds, non-stream")
    parser.add_argument("--stream-seconds", type=float, default=10.0, help="measured seconds, stream (0: skip)")
    parser.add_argument(
        "--delay-ms", type=float, default=UPSTREAM_DELAY_MS, help="the fake upstream's mean answer time"
    )
    parser.add_argument(
        "--delay-jitter-ms",
        type=float,
        default=UPSTREAM_JITTER_MS,
        help="each answer time drawn uniformly this far either side of --delay-ms (0: constant; "
        "a constant one keeps the closed loop's workers in lockstep, see BENCHMARKS.md)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=4,
        help="alternating rounds of direct and TrustGate per mode, each a share of the seconds",
    )
    parser.add_argument(
        "--noise-budget",
        type=float,
        default=90.0,
        help="seconds, in all, for waiting out other programs and re-measuring phases they disturbed",
    )


def load_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Options:
    """``add_load_options``' values as ``Options``; out-of-range ones end the program with the parser's error."""
    if not (
        1 <= args.concurrency <= 1000
        and 0 < args.seconds <= 600
        and 0 <= args.stream_seconds <= 600
        and 0 <= args.warmup <= 60
        and 0 <= args.noise_budget <= 600
        and 1 <= args.rounds <= 20
        and 0 <= args.delay_jitter_ms <= args.delay_ms
    ):
        parser.error(
            "out-of-range --concurrency/--seconds/--stream-seconds/--warmup/--noise-budget/--rounds"
            "/--delay-jitter-ms (at most --delay-ms)"
        )
    return Options(
        args.concurrency,
        args.warmup,
        args.seconds,
        args.stream_seconds,
        args.delay_ms,
        args.noise_budget,
        args.rounds,
        args.delay_jitter_ms,
    )
