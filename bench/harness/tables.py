"""The markdown a benchmark prints: each target's figures, the ratio round by round, and the run's environment."""

from __future__ import annotations

import datetime as dt
import math
import os
import platform
from collections.abc import Sequence

from .load import LoadResult, Options

__all__ = ["find_result", "fmt", "load_line", "machine_line", "results_table", "rounds_table"]


def fmt(value: float, digits: int = 1) -> str:
    return "n/a" if math.isnan(value) else f"{value:.{digits}f}"


def find_result(results: list[LoadResult], target: str, stream: bool) -> LoadResult | None:
    return next((r for r in results if r.target == target and r.stream == stream), None)


def results_table(results: list[LoadResult]) -> str:
    header = (
        "| target | mode | requests | errors | req/s | p50 ms | p99 ms | added p50 ms | added p99 ms "
        "| gateway CPU ms/req | upstream CPU ms/req | load-gen CPU ms/req | other programs (cores) |"
    )
    rows = [header, "|" + "---|" * header.count(" | ") + "---|"]
    for result in results:
        base = find_result(results, "direct", result.stream)
        added = [
            (result.percentile_ms(q) - base.percentile_ms(q)) if base and result is not base else math.nan
            for q in (0.5, 0.99)
        ]
        cells = [
            result.target,
            "stream" if result.stream else "non-stream",
            str(len(result.latencies)),
            str(result.errors),
            fmt(result.throughput),
            fmt(result.percentile_ms(0.5)),
            fmt(result.percentile_ms(0.99)),
            fmt(added[0]),
            fmt(added[1]),
            fmt(result.cpu_ms_per_request("gateway"), 2),
            fmt(result.cpu_ms_per_request("upstream"), 2),
            fmt(result.cpu_ms_per_request("loadgen"), 2),
            fmt(result.other_cores, 2),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def rounds_table(phases: Sequence[LoadResult], target: str = "trustgate") -> str:
    """``target``'s throughput over the direct upstream's in each round: how far one round's ratio
    strays is how far a ratio taken from one pair of phases could have."""
    rows = ["| mode | throughput vs direct, round by round | combined |", "|---|---|---|"]
    for stream in (False, True):
        direct = [p for p in phases if p.target == "direct" and p.stream == stream]
        ours = [p for p in phases if p.target == target and p.stream == stream]
        if not direct or len(direct) != len(ours):
            continue
        each = ", ".join(f"{o.throughput / d.throughput:.3f}" for d, o in zip(direct, ours, strict=True))
        whole = LoadResult.combined(ours).throughput / LoadResult.combined(direct).throughput
        rows.append(f"| {'stream' if stream else 'non-stream'} | {each} | {whole:.3f} |")
    return "\n".join(rows)


def machine_line() -> str:
    """When and on what a run was taken: the date, the CPUs and Python."""
    return (
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC · {os.cpu_count()} CPUs ({platform.machine()}) · "
        f"Python {platform.python_version()}"
    )


def load_line(options: Options, targets: str) -> str:
    """The load each target got; ``targets`` names those that alternate in the rounds."""
    return (
        f"concurrency {options.concurrency} · warm-up {options.warmup:g} s · "
        f"{options.seconds:g} s non-stream + {options.stream_seconds:g} s stream per target "
        f"({targets} in {options.rounds} alternating rounds) · upstream delay {options.upstream_delay}"
    )
