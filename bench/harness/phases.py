"""Measured phases: one target under load with every process's CPU counted, guarded against other programs,
and targets taking turns in alternating rounds.

A phase first waits for the machine to be quiet, and one that other programs disturbed anyway is
measured once more, both within a bounded allowance of time for the whole run (``NoiseAllowance``).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from .cpu import QUIET_CORES, machine_busy_seconds, wait_for_quiet
from .load import LoadResult, Options, closed_loop, request_call
from .processes import BenchError, ServerProcess, raise_on_sigterm
from .servers import Target

__all__ = [
    "NOISY_CORES",
    "Measured",
    "NoiseAllowance",
    "Run",
    "check_answers",
    "measure",
    "measure_phase",
    "run_alternating",
    "run_measured",
]

# A phase during which other programs used more than this many cores is measured again.
NOISY_CORES = 0.3
# The longest wait for quiet before one phase.
QUIET_WAIT_SECONDS = 20.0


def measure(target: Target, *, stream: bool, options: Options, processes: dict[str, ServerProcess]) -> LoadResult:
    """Warm up, then measure; CPU time counts the measured part only."""
    call = request_call(target, stream)
    seconds = options.stream_seconds if stream else options.seconds
    asyncio.run(closed_loop(call, options.concurrency, options.warmup))
    before = {role: p.cpu_seconds() for role, p in processes.items()}
    load_before, machine_before = time.process_time(), machine_busy_seconds()
    tally, elapsed = asyncio.run(closed_loop(call, options.concurrency, seconds))
    cpu = {role: p.cpu_seconds() - before[role] for role, p in processes.items()}
    cpu["loadgen"] = time.process_time() - load_before
    cpu["other"] = max(machine_busy_seconds() - machine_before - sum(cpu.values()), 0.0)
    result = LoadResult(target.name, stream, elapsed, tally.latencies, tally.errors, cpu)
    if not tally.latencies:
        raise BenchError(f"{target.name}: no successful request ({tally.errors} errors)")
    print(
        f"  {target.name:<14} {'stream' if stream else 'plain ':<6} {result.throughput:7.1f} req/s  "
        f"p50 {result.percentile_ms(0.5):6.1f} ms  p99 {result.percentile_ms(0.99):6.1f} ms  "
        f"errors {tally.errors}  other programs {result.other_cores:.2f} cores",
        flush=True,
    )
    return result


@dataclass
class NoiseAllowance:
    """Wall-clock seconds the whole run may spend waiting for other programs and re-measuring
    the phases they disturbed: bounded, so that a busy machine cannot stretch the run without end."""

    seconds: float

    @contextlib.contextmanager
    def spending(self) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds -= time.monotonic() - started


def measure_phase(
    target: Target, *, stream: bool, options: Options, processes: dict[str, ServerProcess], allowance: NoiseAllowance
) -> LoadResult:
    """One phase, guarded against other programs: wait for quiet first, measure again if disturbed."""
    with allowance.spending():
        busy = wait_for_quiet(min(QUIET_WAIT_SECONDS, max(allowance.seconds, 0.0)))
    if busy > QUIET_CORES:
        print(f"  other programs keep {busy:.2f} cores busy: figures will be noisy", flush=True)
    result = measure(target, stream=stream, options=options, processes=processes)
    duration = options.warmup + (options.stream_seconds if stream else options.seconds)
    if result.other_cores > NOISY_CORES and allowance.seconds >= duration:
        print("  disturbed by other programs: measuring this phase again", flush=True)
        with allowance.spending():
            wait_for_quiet(min(QUIET_WAIT_SECONDS, max(allowance.seconds - duration, 0.0)))
            again = measure(target, stream=stream, options=options, processes=processes)
        result = min(result, again, key=lambda r: r.other_cores)
    return result


def check_answers(target: Target) -> None:
    """One request of each kind before any load: a misconfigured target fails loudly, not as 0 req/s."""
    with httpx.Client(timeout=30.0) as client:
        plain = client.post(f"{target.base_url}/v1/chat/completions", json=target.body(False), headers=target.headers)
        if plain.status_code != 200 or "choices" not in plain.json():
            raise BenchError(f"{target.name}: {plain.status_code} {plain.text[:500]}")
        with client.stream(
            "POST", f"{target.base_url}/v1/chat/completions", json=target.body(True), headers=target.headers
        ) as streamed:
            text = streamed.read().decode(errors="replace")
        if streamed.status_code != 200 or "[DONE]" not in text:
            raise BenchError(f"{target.name} stream: {streamed.status_code} {text[:500]}")


@dataclass(frozen=True)
class Measured:
    """A target and the processes whose CPU its phases count."""

    target: Target
    processes: dict[str, ServerProcess]


def run_alternating(
    pair: Sequence[Measured], options: Options, allowance: NoiseAllowance
) -> tuple[list[LoadResult], list[LoadResult]]:
    """Each mode in ``options.rounds`` rounds, every target once per round, the order reversed every
    other round; returns the combined results and every round's phases.

    The throughput ratio of two targets measured one after the other swung by up to 0.07 from run
    to run on a quiet two-core machine, at equal CPU per request: whatever the machine did during one
    target's single phase weighed on it alone. Short alternating phases spread that over both.
    """
    for measured in pair:
        check_answers(measured.target)
    modes = [False, True] if options.stream_seconds > 0 else [False]
    phases: list[LoadResult] = []
    for stream in modes:
        for index in range(options.rounds):
            order = pair if index % 2 == 0 else list(reversed(pair))
            for measured in order:
                print(f"  round {index + 1}/{options.rounds}", end="", flush=True)
                phases.append(
                    measure_phase(
                        measured.target,
                        stream=stream,
                        options=options.one_round(first=index == 0),
                        processes=measured.processes,
                        allowance=allowance,
                    )
                )
    combined = [
        LoadResult.combined([p for p in phases if p.target == m.target.name and p.stream == stream])
        for m in pair
        for stream in modes
    ]
    return combined, phases


Run = Callable[[Options, Path], tuple[list[LoadResult], list[LoadResult]]]


def run_measured(run: Run, options: Options) -> tuple[list[LoadResult], list[LoadResult]] | None:
    """``run(options, workdir)`` in a temporary directory, with SIGTERM stopping every server; its combined results
    and rounds, or None once a ``BenchError`` has been printed."""
    signal.signal(signal.SIGTERM, raise_on_sigterm)
    with tempfile.TemporaryDirectory(prefix="trustgate-bench-") as tmp:
        try:
            return run(options, Path(tmp))
        except BenchError as exc:
            print(f"bench failed: {exc}", file=sys.stderr)
            return None
