"""Gateway overhead: TrustGate vs LiteLLM's own proxy vs calling the upstream directly.

Run from the repository root (``make bench`` does)::

    .venv/bin/python -m bench.gateway_load

One run measures, one target after the other and never concurrently:

1. ``direct``   — the fake upstream itself (``tests.fake_upstream``, answering
   after 12 ± 6 ms, drawn uniformly), the baseline every "added latency" is measured against;
2. ``trustgate`` — ``trustgate serve`` on the pass-through path, in front of it;
3. ``litellm-proxy`` — LiteLLM's proxy (``litellm[proxy]==1.106.2``, installed
   into ``.bench-venv`` on first use), same model_list, no database.

Every server is a separate process on 127.0.0.1. The load generator is a
closed loop (asyncio + aiohttp, ``--concurrency`` workers, each sending its next
request when the previous one is answered), first a warm-up, then a fixed
duration. Besides throughput and latency it reads each process group's CPU time
from /proc: on a small machine the load generator, the gateway and the upstream
share the cores, and CPU per request is the figure that depends least on that
sharing. The CPU that programs outside the benchmark took during each phase is
reported too (on a shared machine it is the noise figure). Against such
programs each phase first waits for the machine to be quiet, and a phase they
disturbed anyway is measured once more (the quieter of the two is kept), both
within a bounded allowance of extra time (``--noise-budget``).

The result is printed as a markdown table and written into BENCHMARKS.md under
``SECTION_TITLE`` (``--no-write`` to skip).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from bench import regressions
from bench.harness.load import ROUND_WARMUP_SECONDS, LoadResult, Options, add_load_options, load_options
from bench.harness.phases import (
    NOISY_CORES,
    Measured,
    NoiseAllowance,
    check_answers,
    measure_phase,
    run_alternating,
    run_measured,
)
from bench.harness.processes import REPO, BenchError, ServerProcess, free_port, running
from bench.harness.servers import (
    GROUP,
    MASTER_KEY,
    UPSTREAM_KEY,
    WIRE_MODEL,
    Target,
    fake_upstream,
    model_list,
    trustgate_server,
    write_yaml,
)
from bench.harness.tables import find_result, load_line, machine_line, results_table, rounds_table

BENCH_VENV = REPO / ".bench-venv"
LITELLM_SPEC = "litellm[proxy]==1.106.2"
LITELLM_VERSION = LITELLM_SPEC.rsplit("==", 1)[1]
SECTION_TITLE = "## Gateway overhead vs LiteLLM proxy (issue: gateway core)"
COMMAND = ".venv/bin/python -m bench.gateway_load"

# The aim for TrustGate relative to LiteLLM's proxy.
AIM_THROUGHPUT_RATIO = 3.0
AIM_ADDED_LATENCY_RATIO = 1 / 3


def litellm_proxy(executable: Path, port: int, upstream_port: int, workdir: Path) -> ServerProcess:
    """LiteLLM's proxy as a user would run it, minus the database (no DATABASE_URL: master key only)."""
    config = write_yaml(
        workdir / "litellm.yaml",
        {
            "model_list": model_list(upstream_port),
            "general_settings": {"master_key": MASTER_KEY},
        },
    )
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "VIRTUAL_ENV")}
    # Local price map (no fetch from GitHub at start-up); LITELLM_LOG=ERROR also sets
    # uvicorn's log level, which silences its access log, as --no-access-log does for TrustGate.
    env.update(
        LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_LOG="ERROR", LITELLM_TELEMETRY="False", DISABLE_ADMIN_UI="True"
    )
    argv = [str(executable), "--config", str(config), "--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"]
    return ServerProcess("litellm proxy", argv, workdir / "litellm.log", env=env)


def ensure_litellm_proxy() -> Path:
    """``.bench-venv/bin/litellm`` at the pinned version, creating the venv on first use.

    LiteLLM's proxy extras pull in dependencies (and versions) the gateway does
    not want in its own environment, hence a separate virtualenv.
    """
    executable = BENCH_VENV / "bin" / "litellm"
    python = BENCH_VENV / "bin" / "python"
    if executable.exists() and _installed_litellm(python) == LITELLM_VERSION:
        return executable
    if not python.exists():
        base = shutil.which("python3.11") or sys.executable
        _run_checked([base, "-m", "venv", str(BENCH_VENV)], "creating .bench-venv")
    print(f"installing {LITELLM_SPEC} into {BENCH_VENV.name} (first run only) ...", flush=True)
    _run_checked(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", LITELLM_SPEC],
        f"pip install '{LITELLM_SPEC}'",
    )
    if not executable.exists():
        raise BenchError(f"{executable} missing after installing {LITELLM_SPEC}")
    return executable


def _installed_litellm(python: Path) -> str | None:
    if not python.exists():
        return None
    probe = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('litellm'))"],
        capture_output=True,
        text=True,
        check=False,
    )
    return probe.stdout.strip() if probe.returncode == 0 else None


def _run_checked(argv: Sequence[str], what: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        errors = [
            line for line in (done.stdout + done.stderr).splitlines() if not line.startswith("WARNING: Location")
        ]  # the local index mirror's noise
        raise BenchError(f"{what} failed (exit {done.returncode}):\n" + "\n".join(errors[-40:]))


def run_target(
    target: Target, options: Options, processes: dict[str, ServerProcess], allowance: NoiseAllowance
) -> list[LoadResult]:
    check_answers(target)
    modes = [False, True] if options.stream_seconds > 0 else [False]
    return [
        measure_phase(target, stream=stream, options=options, processes=processes, allowance=allowance)
        for stream in modes
    ]


def run_all(options: Options, workdir: Path) -> tuple[list[LoadResult], list[LoadResult]]:
    """Baseline and TrustGate in alternating rounds, then LiteLLM's proxy, which runs only while it
    is measured; returns the combined results and the rounds of the first two."""
    litellm = ensure_litellm_proxy()
    upstream_port = free_port()
    upstream = fake_upstream(upstream_port, options.delay_ms, workdir, options.delay_jitter_ms)
    results: list[LoadResult] = []
    allowance = NoiseAllowance(options.noise_budget)
    with running(upstream, f"http://127.0.0.1:{upstream_port}/v1/models", timeout=30):
        direct = Target("direct", f"http://127.0.0.1:{upstream_port}", UPSTREAM_KEY, WIRE_MODEL)
        port = free_port()
        with running(
            trustgate_server(port, upstream_port, workdir), f"http://127.0.0.1:{port}/health/liveness", timeout=60
        ) as gateway:
            print("direct (baseline) and trustgate, alternating:", flush=True)
            target = Target("trustgate", f"http://127.0.0.1:{port}", MASTER_KEY, GROUP)
            combined, rounds = run_alternating(
                [
                    Measured(direct, {"upstream": upstream}),
                    Measured(target, {"gateway": gateway, "upstream": upstream}),
                ],
                options,
                allowance,
            )
            results += combined

        port = free_port()
        with running(
            litellm_proxy(litellm, port, upstream_port, workdir),
            f"http://127.0.0.1:{port}/health/liveliness",
            timeout=180,
        ) as gateway:
            print("litellm proxy:", flush=True)
            target = Target("litellm-proxy", f"http://127.0.0.1:{port}", MASTER_KEY, GROUP)
            results += run_target(target, options, {"gateway": gateway, "upstream": upstream}, allowance)
    return results, rounds


def ratios_table(results: list[LoadResult]) -> str:
    """TrustGate relative to LiteLLM's proxy, against its aim (≥3× throughput, ≤1/3 added latency)."""
    rows = [
        "| mode | throughput ratio (aim ≥ 3) | added p50 ratio (aim ≤ 0.33) | added p99 ratio "
        "| gateway CPU/req ratio |",
        "|---|---|---|---|---|",
    ]
    for stream in (False, True):
        ours, theirs, base = (find_result(results, name, stream) for name in ("trustgate", "litellm-proxy", "direct"))
        if not (ours and theirs and base):
            continue
        added = [
            (ours.percentile_ms(q) - base.percentile_ms(q)) / (theirs.percentile_ms(q) - base.percentile_ms(q))
            for q in (0.5, 0.99)
        ]
        throughput = ours.throughput / theirs.throughput
        cpu = ours.cpu_ms_per_request("gateway") / theirs.cpu_ms_per_request("gateway")
        verdict = [
            "met" if throughput >= AIM_THROUGHPUT_RATIO else "missed",
            "met" if added[0] <= AIM_ADDED_LATENCY_RATIO else "missed",
        ]
        rows.append(
            f"| {'stream' if stream else 'non-stream'} | {throughput:.2f}× ({verdict[0]}) "
            f"| {added[0]:.3f} ({verdict[1]}) | {added[1]:.3f} | {cpu:.3f} |"
        )
    return "\n".join(rows)


def environment(options: Options) -> str:
    loop = "uvloop" if _has_module("uvloop") else "asyncio"
    return (
        f"{machine_line()} · TrustGate event loop: {loop} · "
        f"LiteLLM proxy {LITELLM_VERSION} (uvicorn, 1 worker, no database) · "
        f"{load_line(options, 'direct and TrustGate')}"
    )


def _has_module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def method(options: Options) -> str:
    """How the figures were taken, in the words a reader of BENCHMARKS.md needs to judge them."""
    return (
        "Targets run one after the other, never at once: the fake upstream alone (`direct`, "
        f"`tests.fake_upstream --delay-ms {options.delay_ms:g} --delay-jitter-ms {options.delay_jitter_ms:g} "
        "--http h11`) and `trustgate serve` (pass-through "
        f"path, scoring off, `--no-access-log`) take turns in {options.rounds} rounds per mode, the order "
        "reversed every other round, each round a share of the measured seconds (a full warm-up before "
        f"the first, {ROUND_WARMUP_SECONDS:g} s before the others), and their rounds are added up; then "
        "LiteLLM's proxy in one phase per mode (`.bench-venv/bin/litellm --config`, "
        "same `model_list`, master key, no database, `LITELLM_LOG=ERROR`, which also silences its access "
        f"log). Load: a closed loop of {options.concurrency} workers on keep-alive connections (asyncio + "
        "aiohttp), `POST /v1/chat/completions` with one short user message, non-streaming then streaming "
        "(a stream counts when its `[DONE]` has arrived). The upstream's answer times vary around their "
        "mean, as a model's do: with a constant one the workers stay in lockstep, and the closed loop "
        "then rewarded a gateway that wasted CPU (BENCHMARKS.md, \"Why the fake upstream's answer time "
        "varies\"). Added latency = the target's percentile minus "
        "the direct percentile. The load generator, the gateway and the upstream share the machine's "
        "cores, so throughput is bounded by all three together; CPU ms per request of each process is "
        "the figure that depends least on that sharing. *Other programs* is the CPU that processes "
        "outside the benchmark used during the phase (each phase waits for quiet first; one with more than "
        f"{NOISY_CORES:g} cores is measured again and the quieter of the two kept, within "
        f"{options.noise_budget:g} s of extra time per run): above ~0.2 cores a row is noisy."
    )


def headline_figures(results: list[LoadResult]) -> dict[str, float]:
    """TrustGate's figures per mode that ``bench.regressions`` compares run to run, and the direct phase's
    upstream CPU per request that tells whether two runs had the same machine."""
    figures: dict[str, float] = {}
    for stream in (False, True):
        ours, base = find_result(results, "trustgate", stream), find_result(results, "direct", stream)
        if ours is None or base is None:
            continue
        mode = "stream" if stream else "non-stream"
        figures[f"{mode}.throughput_vs_direct"] = ours.throughput / base.throughput
        figures[f"{mode}.gateway_cpu_ms_per_request"] = ours.cpu_ms_per_request("gateway")
        figures[f"{mode}.upstream_cpu_ms_per_request"] = base.cpu_ms_per_request("upstream")
        figures[f"{mode}.gateway_cpu_vs_upstream"] = (
            figures[f"{mode}.gateway_cpu_ms_per_request"] / figures[f"{mode}.upstream_cpu_ms_per_request"]
        )
        for q, name in ((0.5, "added_p50_ms"), (0.99, "added_p99_ms")):
            figures[f"{mode}.{name}"] = ours.percentile_ms(q) - base.percentile_ms(q)
    return {name: value for name, value in figures.items() if not math.isnan(value)}


def report(
    results: list[LoadResult],
    phases: list[LoadResult],
    options: Options,
    committed: Mapping[str, float],
    figures: Mapping[str, float],
) -> str:
    return "\n\n".join(
        [
            f"Command: `{COMMAND}` (what `make bench` runs; `--help` lists its options).",
            environment(options),
            method(options),
            results_table(results),
            "Round by round (the spread is the noise of a ratio taken from a single pair of phases):",
            rounds_table(phases),
            "TrustGate relative to LiteLLM's proxy (the issue's aim: at least 3× the throughput and at most "
            "1/3 of the added latency):",
            ratios_table(results),
            regressions.report(committed, figures),
        ]
    )


def write_section(path: Path, body: str) -> None:
    """Replace this benchmark's section of BENCHMARKS.md (up to the next ``## ``), or append it."""
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    lines = text.splitlines()
    if SECTION_TITLE in lines:
        start = lines.index(SECTION_TITLE)
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        before, after = lines[:start], lines[end:]
    else:
        before, after = [*lines, ""], []
    section = [SECTION_TITLE, "", *body.strip().splitlines(), ""]
    path.write_text("\n".join([*before, *section, *after]).rstrip() + "\n")


def _parse(argv: Sequence[str] | None) -> tuple[Options, argparse.Namespace]:
    parser = argparse.ArgumentParser(
        prog="python -m bench.gateway_load", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_load_options(parser)
    parser.add_argument("--output", type=Path, default=REPO / "BENCHMARKS.md")
    parser.add_argument("--no-write", action="store_true", help="print only; leave BENCHMARKS.md alone")
    args = parser.parse_args(argv)
    return load_options(parser, args), args


def main(argv: Sequence[str] | None = None) -> int:
    options, args = _parse(argv)
    if (measured := run_measured(run_all, options)) is None:
        return 1
    results, phases = measured
    figures = headline_figures(results)
    committed = regressions.committed_figures(upstream=options.upstream_delay)
    text = report(results, phases, options, committed, figures)
    print("\n" + text)
    if not args.no_write:
        write_section(args.output, text)
        regressions.write_figures(
            figures,
            {
                "date": f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
                "command": COMMAND,
                "upstream": options.upstream_delay,
            },
        )
        print(f"\nwritten to {args.output} and {regressions.BASELINE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
