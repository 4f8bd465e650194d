"""Two or more versions of the gateway, measured side by side in one run: which costs less per request?

    .venv/bin/python -m bench.gateway_ab --checkout /tmp/before --checkout . --rounds 2

Each ``--checkout`` is a source tree of TrustGate (a ``git worktree`` of another
commit, say) run with this virtual environment. One fake upstream serves them
all; in each round every version runs the harness's closed loop (``bench.harness``)
(non-stream, then stream) in turn, the order reversed every other round, so
that a machine that grows busier during the run weighs on each version alike.
On a shared machine the absolute figures are noise: read the ratios between
versions within a round, and whether they agree across rounds.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench.harness.load import Options
from bench.harness.phases import NoiseAllowance, check_answers, measure_phase
from bench.harness.processes import ServerProcess, free_port, running
from bench.harness.servers import (
    GROUP,
    MASTER_KEY,
    UPSTREAM_DELAY_MS,
    UPSTREAM_JITTER_MS,
    Target,
    fake_upstream,
    trustgate_server,
)


def gateway_from(checkout: Path, port: int, upstream_port: int, workdir: Path) -> ServerProcess:
    """``trustgate serve`` as ``make bench`` runs it, from the sources in ``checkout``."""
    server = trustgate_server(port, upstream_port, workdir)
    server.argv = [sys.executable, "-m", "trustgate", *server.argv[1:]]
    server.env = {**os.environ, "PYTHONPATH": str(checkout)}
    server.cwd = checkout
    return server


def versions_parser(module: str, description: str | None, rounds: int) -> argparse.ArgumentParser:
    """The command line of a benchmark that runs versions side by side: ``--checkout`` (repeated) and ``--rounds``."""
    parser = argparse.ArgumentParser(
        prog=f"python -m {module}", description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--checkout", type=Path, action="append", required=True, help="a source tree (repeat)")
    parser.add_argument("--rounds", type=int, default=rounds)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = versions_parser("bench.gateway_ab", __doc__, rounds=2)
    parser.add_argument("--seconds", type=float, default=10.0, help="measured seconds per phase")
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--delay-ms", type=float, default=UPSTREAM_DELAY_MS)
    parser.add_argument("--delay-jitter-ms", type=float, default=UPSTREAM_JITTER_MS, help="as bench.gateway_load's")
    args = parser.parse_args(argv)
    options = Options(
        args.concurrency,
        args.warmup,
        args.seconds,
        args.seconds,
        args.delay_ms,
        noise_budget=0.0,
        delay_jitter_ms=args.delay_jitter_ms,
    )
    checkouts = [c.resolve() for c in args.checkout]
    rows: list[str] = []
    with tempfile.TemporaryDirectory(prefix="trustgate-ab-") as tmp:
        workdir = Path(tmp)
        upstream_port = free_port()
        with running(
            fake_upstream(upstream_port, args.delay_ms, workdir, args.delay_jitter_ms),
            f"http://127.0.0.1:{upstream_port}/v1/models",
            timeout=30,
        ) as upstream:
            for round_ in range(args.rounds):
                order = list(enumerate(checkouts))
                for index, checkout in order if round_ % 2 == 0 else order[::-1]:
                    port = free_port()
                    with running(
                        gateway_from(checkout, port, upstream_port, workdir),
                        f"http://127.0.0.1:{port}/health/liveness",
                        timeout=60,
                    ) as gateway:
                        print(f"round {round_ + 1}, version {index + 1} ({checkout}):", flush=True)
                        target = Target("trustgate", f"http://127.0.0.1:{port}", MASTER_KEY, GROUP)
                        check_answers(target)
                        for stream in (False, True):
                            result = measure_phase(
                                target,
                                stream=stream,
                                options=options,
                                processes={"gateway": gateway, "upstream": upstream},
                                allowance=NoiseAllowance(0.0),
                            )
                            rows.append(
                                f"| {round_ + 1} | {index + 1} | {'stream' if stream else 'non-stream'} "
                                f"| {result.throughput:.1f} | {result.percentile_ms(0.5):.1f} "
                                f"| {result.percentile_ms(0.99):.1f} "
                                f"| {result.cpu_ms_per_request('gateway'):.3f} "
                                f"| {result.other_cores:.2f} |"
                            )
    print("\n" + "\n".join(f"version {i + 1}: {c}" for i, c in enumerate(checkouts)))
    print("\n| round | version | mode | req/s | p50 ms | p99 ms | gateway CPU ms/req | other programs (cores) |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
