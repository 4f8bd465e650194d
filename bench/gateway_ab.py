"""Two or more versions of the gateway, measured side by side in one run: which costs less per request?

    .venv/bin/python -m bench.gateway_ab --checkout /tmp/before --checkout . --rounds 2

Each ``--checkout`` is a source tree of TrustGate (a ``git worktree`` of another
commit, say) run with this virtual environment. An ``--unpriced`` one runs with
its deployment's price taken away, so spend tracking is off: the same sources
given once each way measure what pricing every answer costs. One fake upstream serves them
all; in each round every version runs the harness's closed loop (``bench.harness``)
(non-stream, then stream) in turn, the order reversed every other round, so
that a machine that grows busier during the run weighs on each version alike.
On a shared machine the absolute figures are noise: read the ratios between
versions within a round, and whether they agree across rounds: the summary
lists each version's ratios to the first, round by round.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Version:
    """One version measured: its sources, and whether its deployment has a price (spend tracking on)."""

    checkout: Path
    priced: bool = True

    def __str__(self) -> str:
        return str(self.checkout) if self.priced else f"{self.checkout} (unpriced)"


class _AddVersion(argparse.Action):
    """``--checkout`` and ``--unpriced`` add to one list, in the order given: the first is what the others are
    compared with."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[object] | None,
        option_string: str | None = None,
    ) -> None:
        version = Version(Path(str(values)).resolve(), priced=bool(self.const))
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest) or []), version])


def gateway_from(version: Version, port: int, upstream_port: int, workdir: Path) -> ServerProcess:
    """``trustgate serve`` as ``make bench`` runs it, from the sources in ``version``'s checkout."""
    server = trustgate_server(port, upstream_port, workdir, version.priced)
    server.argv = [sys.executable, "-m", "trustgate", *server.argv[1:]]
    server.env = {**os.environ, "PYTHONPATH": str(version.checkout)}
    server.cwd = version.checkout
    return server


def versions_parser(module: str, description: str | None, rounds: int) -> argparse.ArgumentParser:
    """The command line of a benchmark that runs versions side by side: ``--checkout`` and ``--unpriced``
    (repeated, into ``versions``) and ``--rounds``."""
    parser = argparse.ArgumentParser(
        prog=f"python -m {module}", description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--checkout", dest="versions", action=_AddVersion, const=True, metavar="PATH", help="a source tree (repeat)"
    )
    parser.add_argument(
        "--unpriced",
        dest="versions",
        action=_AddVersion,
        const=False,
        metavar="PATH",
        help="a source tree run with no price on its deployment: spend tracking off (repeat)",
    )
    parser.add_argument("--rounds", type=int, default=rounds)
    return parser


def versions(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[Version]:
    """The versions given, in order; at least one."""
    if not args.versions:
        parser.error("give at least one --checkout or --unpriced")
    chosen: list[Version] = args.versions
    return chosen


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
    measured = versions(parser, args)
    rows: list[str] = []
    figures: dict[tuple[int, str], list[tuple[float, float]]] = {}  # (version, mode) → (req/s, CPU ms) by round
    with tempfile.TemporaryDirectory(prefix="trustgate-ab-") as tmp:
        workdir = Path(tmp)
        upstream_port = free_port()
        with running(
            fake_upstream(upstream_port, args.delay_ms, workdir, args.delay_jitter_ms),
            f"http://127.0.0.1:{upstream_port}/v1/models",
            timeout=30,
        ) as upstream:
            for round_ in range(args.rounds):
                order = list(enumerate(measured))
                for index, version in order if round_ % 2 == 0 else order[::-1]:
                    port = free_port()
                    with running(
                        gateway_from(version, port, upstream_port, workdir),
                        f"http://127.0.0.1:{port}/health/liveness",
                        timeout=60,
                    ) as gateway:
                        print(f"round {round_ + 1}, version {index + 1} ({version}):", flush=True)
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
                            mode = "stream" if stream else "non-stream"
                            cpu = result.cpu_ms_per_request("gateway")
                            figures.setdefault((index, mode), []).append((result.throughput, cpu))
                            rows.append(
                                f"| {round_ + 1} | {index + 1} | {mode} "
                                f"| {result.throughput:.1f} | {result.percentile_ms(0.5):.1f} "
                                f"| {result.percentile_ms(0.99):.1f} "
                                f"| {cpu:.3f} "
                                f"| {result.other_cores:.2f} |"
                            )
    print("\n" + "\n".join(f"version {i + 1}: {v}" for i, v in enumerate(measured)))
    print("\n| round | version | mode | req/s | p50 ms | p99 ms | gateway CPU ms/req | other programs (cores) |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(ratios_table(figures, len(measured)))
    return 0


def ratios_table(figures: dict[tuple[int, str], list[tuple[float, float]]], count: int) -> str:
    """Each version's throughput and CPU per request over the first's, round by round, and their medians:
    how far apart the rounds are is the noise a difference must stand out of."""
    lines = ["\n| version | mode | throughput vs 1, by round | median | CPU per request vs 1, by round | median |"]
    lines.append("|---|---|---|---|---|---|")
    for index in range(1, count):
        for mode in ("non-stream", "stream"):
            pairs = list(zip(figures[(0, mode)], figures[(index, mode)], strict=True))
            throughput = [mine[0] / first[0] for first, mine in pairs]
            cpu = [mine[1] / first[1] for first, mine in pairs]
            lines.append(
                f"| {index + 1} | {mode} | {', '.join(f'{r:.2f}' for r in throughput)} "
                f"| {statistics.median(throughput):.2f} | {', '.join(f'{r:.2f}' for r in cpu)} "
                f"| {statistics.median(cpu):.2f} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
