"""Does a relabel storm slow another key? Its p99 under a storm of labels and relabels, against a quiet run.

Run from the repository root, alone on the machine (no other benchmark or test beside it)::

    .venv/bin/python -m bench.relabel_storm
    .venv/bin/python -m bench.relabel_storm --seconds 5 --rounds 1 --records 80 --storm-rate 20   # a short check

Every server is its own process on 127.0.0.1: the fake upstream and ``trustgate serve`` with two keys. The
``victim`` key's chat is not scored (``per_key: mode: off``), as a tenant's plain traffic; the ``storm`` key
is a labeller with no label rate limit (the worst case: a team key past ``feedback.labels_per_minute``
would get cheap 429s instead) whose answers are scored by ``lp`` alone (no upstream call), so that its
records can be labelled.

Before the rounds the storm key makes ``--records`` scored records. Then, ``--rounds`` times, a quiet phase
and a storm phase take turns, each ``--seconds`` long: the victim's closed loop (``--concurrency``
workers, as ``bench.gateway_load``'s) alone, then beside the storm, ``--storm-rate`` labels a second,
one first label of a fresh record per ``--relabels`` relabels of records labelled already (24: a storm
mostly of relabels, with a fresh record now and then). Every ``feedback.refit_every`` (25) first labels
bring a refit, made in a process of its own, at most one per ``feedback.min_refit_interval_s`` (30 s);
relabels bring none.

Printed per phase: the victim's requests, p50 and p99, the labels sent (and refused), the refits made;
then the storm phases' p99 over the quiet ones' (all rounds together), against the target of 1.2.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import httpx
from prometheus_client.parser import text_string_to_metric_families

from bench.harness.load import LoadResult, closed_loop, request_call
from bench.harness.processes import BenchError, ServerProcess, free_port, running
from bench.harness.servers import GROUP, MASTER_KEY, Target, fake_upstream, model_list, write_yaml
from bench.harness.tables import machine_line

COMMAND = ".venv/bin/python -m bench.relabel_storm"
TARGET_P99_RATIO = 1.2
VICTIM_KEY, STORM_KEY = "sk-bench-victim", "sk-bench-storm"
REFIT_EVERY = 25
REFITS = "trustgate_calibration_refits_total"


def gateway_config(port: int, upstream_port: int, workdir: Path) -> dict[str, object]:
    """The victim unscored; the storm key a labeller without a rate limit, its answers scored by lp alone."""
    return {
        "model_list": model_list(upstream_port),
        "general_settings": {"master_key": MASTER_KEY},
        "trustgate": {
            "server": {"host": "127.0.0.1", "port": port},
            "passthrough": True,
            "keys": [
                {"key": VICTIM_KEY, "name": "victim"},
                {"key": STORM_KEY, "name": "storm", "labeller": True},
            ],
            "store": {"path": str(workdir / "trust-records.sqlite3")},
            "scoring": {
                "mode": "async",
                "consistency": {"enabled": False},
                "factcheck": {"enabled": False},
                "sc": {"enabled": False},
                "agreement": {"enabled": False},
                "logprob": {"enabled": True},
                "per_key": {"victim": {"mode": "off"}},
                "feedback": {"refit_every": REFIT_EVERY, "min_labels": 50, "labels_per_minute": None},
            },
        },
    }


def counter(base_url: str, name: str) -> float:
    """A counter's value summed over its labels, from the gateway's /metrics."""
    text = httpx.get(f"{base_url}/metrics", timeout=10).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name
    )


def make_records(base_url: str, count: int) -> list[str]:
    """``count`` records of the storm key, each once its job is scored (a pending one takes no label)."""
    ids = []
    with httpx.Client(base_url=base_url, headers={"authorization": f"Bearer {STORM_KEY}"}, timeout=30) as client:
        for i in range(count):
            body = {"model": GROUP, "messages": [{"role": "user", "content": f"What is item {i}?"}]}
            response = client.post("/v1/chat/completions", json=body)
            if response.status_code != 200 or "x-trust-id" not in response.headers:
                raise BenchError(f"storm key's request failed: {response.status_code} {response.text[:300]}")
            ids.append(response.headers["x-trust-id"])
        deadline = time.monotonic() + 120
        while client.get(f"/v1/trust/{ids[-1]}").json().get("status") == "pending":
            if time.monotonic() > deadline:
                raise BenchError("the storm key's records were not scored within 120 s")
            time.sleep(0.2)
    return ids


@dataclass
class Storm:
    """Which record each label of the storm goes to: one fresh record per ``relabels`` relabels."""

    fresh: list[str]
    relabels: int
    labelled: list[str]
    sent: int = 0
    refused: int = 0

    def next_record(self) -> str:
        if self.fresh and (not self.labelled or self.sent % (self.relabels + 1) == 0):
            record = self.fresh.pop()
            self.labelled.append(record)
            return record
        return self.labelled[self.sent % len(self.labelled)]

    async def run(self, base_url: str, rate: float, seconds: float) -> None:
        """``rate`` labels a second for ``seconds``, each sent on schedule (an open loop)."""
        headers = {"authorization": f"Bearer {STORM_KEY}"}
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
            began = time.perf_counter()
            pending: set[asyncio.Task[None]] = set()
            for n in itertools.count():
                due = began + n / rate
                if due - began >= seconds:
                    break
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
                url = f"{base_url}/v1/trust/{self.next_record()}/feedback"
                task = asyncio.create_task(self._label(session, url, headers, n % 2 == 0))
                pending.add(task)
                task.add_done_callback(pending.discard)
            await asyncio.gather(*pending)

    async def _label(self, session: aiohttp.ClientSession, url: str, headers: dict[str, str], correct: bool) -> None:
        self.sent += 1
        async with session.post(url, json={"correct": correct}, headers=headers) as response:
            await response.read()
            if response.status != 200:
                self.refused += 1


@dataclass(frozen=True)
class Phase:
    name: str
    result: LoadResult
    labels: int
    refused: int
    refits: float


async def storm_phase(target: Target, storm: Storm, args: argparse.Namespace) -> LoadResult:
    call = request_call(target, stream=False)
    (tally, elapsed), _ = await asyncio.gather(
        closed_loop(call, args.concurrency, args.seconds), storm.run(target.base_url, args.storm_rate, args.seconds)
    )
    return LoadResult(target.name, False, elapsed, tally.latencies, tally.errors)


def quiet_phase(target: Target, args: argparse.Namespace) -> LoadResult:
    tally, elapsed = asyncio.run(closed_loop(request_call(target, stream=False), args.concurrency, args.seconds))
    return LoadResult(target.name, False, elapsed, tally.latencies, tally.errors)


def run(args: argparse.Namespace, workdir: Path) -> list[Phase]:
    upstream_port, port = free_port(), free_port()
    upstream = fake_upstream(upstream_port, args.delay_ms, workdir, jitter_ms=args.delay_ms / 2)
    config = write_yaml(workdir / "trustgate.yaml", gateway_config(port, upstream_port, workdir))
    trustgate = Path(sys.executable).with_name("trustgate")
    serve = [str(trustgate), "serve", "--config", str(config), "--log-level", "warning", "--no-access-log"]
    gateway = ServerProcess("trustgate", serve, workdir / "trustgate.log")
    base_url = f"http://127.0.0.1:{port}"
    target = Target("victim", base_url, VICTIM_KEY, GROUP)
    phases: list[Phase] = []
    with (
        running(upstream, f"http://127.0.0.1:{upstream_port}/v1/models"),
        running(gateway, f"{base_url}/health/liveness"),
    ):
        storm = Storm(fresh=make_records(base_url, args.records), relabels=args.relabels, labelled=[])
        asyncio.run(closed_loop(request_call(target, stream=False), args.concurrency, args.warmup))
        for index in range(args.rounds):
            for name in ("quiet", "storm") if index % 2 == 0 else ("storm", "quiet"):
                refits, sent, refused = (
                    counter(base_url, "trustgate_calibration_refits_total"),
                    storm.sent,
                    storm.refused,
                )
                result = quiet_phase(target, args) if name == "quiet" else asyncio.run(storm_phase(target, storm, args))
                time.sleep(args.settle)  # a refit the storm started ends before the next phase
                refits = counter(base_url, REFITS) - refits
                phase = Phase(name, result, storm.sent - sent, storm.refused - refused, refits)
                phases.append(phase)
                print(
                    f"  round {index + 1}/{args.rounds} {name:<5} {len(result.latencies):6d} requests  "
                    f"p50 {result.percentile_ms(0.5):6.1f} ms  p99 {result.percentile_ms(0.99):6.1f} ms  "
                    f"errors {result.errors}  labels {phase.labels} ({phase.refused} refused)  refits {refits:g}",
                    flush=True,
                )
    return phases


def report(phases: list[Phase], args: argparse.Namespace) -> str:
    quiet = LoadResult.combined([p.result for p in phases if p.name == "quiet"])
    stormy = LoadResult.combined([p.result for p in phases if p.name == "storm"])
    ratio = stormy.percentile_ms(0.99) / quiet.percentile_ms(0.99)
    lines = [
        f"Command: `{COMMAND} --seconds {args.seconds:g} --rounds {args.rounds} --records {args.records} "
        f"--storm-rate {args.storm_rate:g} --relabels {args.relabels} --concurrency {args.concurrency}`",
        machine_line(),
        "",
        "| phase | requests | p50 ms | p99 ms | labels sent | refused | refits |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, combined in (("quiet", quiet), ("storm", stormy)):
        mine = [p for p in phases if p.name == name]
        lines.append(
            f"| {name} | {len(combined.latencies)} | {combined.percentile_ms(0.5):.1f} | "
            f"{combined.percentile_ms(0.99):.1f} | {sum(p.labels for p in mine)} | {sum(p.refused for p in mine)} | "
            f"{sum(p.refits for p in mine):g} |"
        )
    verdict = "within" if ratio <= TARGET_P99_RATIO else "OVER"
    lines += ["", f"victim p99, storm over quiet: {ratio:.3f} ({verdict} the target of {TARGET_P99_RATIO})"]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="seconds of each phase")
    parser.add_argument("--rounds", type=int, default=3, help="quiet and storm phases, taking turns")
    parser.add_argument("--records", type=int, default=300, help="the storm key's records, made before the rounds")
    parser.add_argument("--storm-rate", type=float, default=50.0, help="labels a second during a storm phase")
    parser.add_argument("--relabels", type=int, default=24, help="relabels per first label of a fresh record")
    parser.add_argument("--concurrency", type=int, default=10, help="the victim's closed-loop workers")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds of the victim's load before the rounds")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds after each phase, for its refits")
    parser.add_argument("--delay-ms", type=float, default=12.0, help="the fake upstream's mean answer time")
    args = parser.parse_args()
    if not (0 < args.seconds <= 600 and 1 <= args.rounds <= 20 and args.records >= 1 and args.storm_rate > 0):
        parser.error("out-of-range --seconds/--rounds/--records/--storm-rate")
    with tempfile.TemporaryDirectory(prefix="trustgate-bench-") as tmp:
        try:
            phases = run(args, Path(tmp))
        except BenchError as exc:
            print(f"bench failed: {exc}", file=sys.stderr)
            return 1
    print(report(phases, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
