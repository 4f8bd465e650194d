"""Does scoring slow users? User latency at a fixed open-loop rate: scoring off vs async, by where scoring runs.

Run from the repository root (after ``make install``, which builds the scoring assets), holding the
shared machine's lock for heavy work::

    .venv/bin/python -m bench.latency_isolation                       # child, inline, redis
    .venv/bin/python -m bench.latency_isolation --configs child,threads

One run. Every server is its own process on 127.0.0.1: the fake upstream (answers after ~12 ms with the
first 16 words of the prompt, as a model held to the checks' ``max_tokens`` would; it judges too) and
one gateway per configuration (``--configs``) with the real scorers (spaCy, the embedded Oxigraph graph,
word vectors, the BM25 index), alike but for where scoring's work runs:

- ``child``: the default settings (``scoring.worker: child``): the whole job, its upstream calls and
  record publishing too, in the gateway's local worker process at nice 10 (with one CPU worker);
- ``inline``: ``scoring.worker: inline``, ``scoring.cpu.processes: 1``: the job in the gateway process,
  its CPU work in one worker process at nice 10;
- ``threads``: ``inline`` with ``scoring.cpu.processes: 0``, in threads of the gateway process (its GIL,
  its event loop's core); not run unless named;
- ``redis``: the Redis queue, the whole job in a ``trustgate worker`` process beside the gateway (itself
  with one CPU worker): the gateway only queues.

They take turns, never loaded at once: the first configuration off, async, the next off, async, ...,
and the same again, each phase ``--seconds`` at ``--rate`` requests/s: an open loop, so requests
go out on schedule whatever the answers do, each asking about another Wikipedia title of the evidence
corpus (no two alike within a gateway, so the graph's query cache does not flatter scoring). In
``async`` phases every answer is scored; the queue holds ``--queue`` jobs and sheds the rest, as a busy
gateway does. After each phase the queue drains before the next starts.

Reported per phase: user p50/p99; answers scored per second during the phase; the gateway process's CPU
per user request; and for async phases what scoring added per scored answer beyond the same requests'
cost with scoring off: CPU in the gateway process, CPU elsewhere (its children: the local worker, the
CPU worker, Oxigraph; the Redis worker's processes) and the scorers' upstream calls, whose HTTP and JSON
work stays in the gateway process with ``inline`` and ``threads`` only. Each phase also shows the cores
that programs outside the benchmark used (the noise). Per gateway: the p99 of both ``async`` phases over
that of both ``off`` phases (the target: at most 1.2).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson
from prometheus_client.parser import text_string_to_metric_families

from bench.harness.cpu import group_cpu_seconds, machine_busy_seconds, process_cpu_seconds
from bench.harness.processes import ServerProcess, free_port, running
from bench.harness.servers import GROUP, MASTER_KEY, Target, model_list, write_yaml
from bench.scoring_load import DATA_DIR, TRUSTGATE, assets_ready, gateway, open_loop, pct, wait_started
from scoring.factcheck.assets import index_dir
from scoring.factcheck.passages import PassageStore
from scoring.settings import ScoringSettings
from tests.redis_server import RedisServer

COMMAND = ".venv/bin/python -m bench.latency_isolation"


@dataclass(frozen=True)
class Arrangement:
    """Where one configuration scores: ``scoring.worker`` and ``scoring.cpu.processes``."""

    worker: str
    processes: int


# REDIS_CONFIG's gateway only queues; a `trustgate worker` scores (with a CPU worker)
CONFIGS = {
    "child": Arrangement("child", 1),
    "inline": Arrangement("inline", 1),
    "threads": Arrangement("inline", 0),
    "redis": Arrangement("child", 1),
}
DEFAULT_CONFIGS = "child,inline,redis"
REDIS_CONFIG = "redis"
TARGET_P99_RATIO = 1.2
DRAIN_TIMEOUT_S = 120.0
UPSTREAM_DELAY_MS = 12.0
REPLY_WORDS = 16  # the checks' answer_max_tokens
WARM_UP_REQUESTS = 100


def questions(count: int) -> list[bytes]:
    """``count`` request bodies, each asking about another Wikipedia title of the packaged evidence corpus."""
    store = PassageStore(index_dir(ScoringSettings(data_dir=DATA_DIR)))
    titles: dict[str, None] = {}
    for row in range(len(store)):
        passage = store[row]
        if passage.id.startswith("wikipedia:"):
            titles.setdefault(passage.title)
    if len(titles) < count:
        raise RuntimeError(f"the corpus has {len(titles)} titles, {count} wanted: lower --rate or --seconds")
    return [
        orjson.dumps({"model": GROUP, "messages": [{"role": "user", "content": f"Tell me about {title}."}]})
        for title in list(titles)[:count]
    ]


def upstream(port: int, workdir: Path) -> ServerProcess:
    """The fake upstream, its replies cut to ``REPLY_WORDS`` words as a model held to ``max_tokens`` answers.

    Uncut, it echoes each whole check prompt back with per-word log-probabilities
    (~370 tokens a reply), and parsing those would be most of the gateway's work.
    """
    argv = [
        sys.executable,
        "-m",
        "tests.fake_upstream",
        "--port",
        str(port),
        "--delay-ms",
        str(UPSTREAM_DELAY_MS),
        "--reply-words",
        str(REPLY_WORDS),
    ]
    return ServerProcess("fake upstream", argv, workdir / "upstream.log")


@dataclass(frozen=True)
class Counts:
    """What the gateway's /metrics counted so far."""

    jobs: dict[str, float]  # trustgate_scoring_jobs_total by status
    scoring_calls: float  # trustgate_upstream_calls_total of every purpose but the user's

    def final_jobs(self) -> float:
        return sum(self.jobs.values())


def scrape(urls: list[str]) -> Counts:
    """The counts summed over the /metrics of the gateway and of its Redis worker, if any."""
    jobs: dict[str, float] = {}
    scoring_calls = 0.0
    for url in urls:
        for family in text_string_to_metric_families(httpx.get(url, timeout=10).text):
            for sample in family.samples:
                if sample.name == "trustgate_scoring_jobs_total":
                    jobs[sample.labels["status"]] = jobs.get(sample.labels["status"], 0.0) + sample.value
                elif sample.name == "trustgate_upstream_calls_total" and sample.labels["purpose"] != "user":
                    scoring_calls += sample.value
    return Counts(jobs, scoring_calls)


def wait_drained(urls: list[str], expected_jobs: int, before: Counts) -> Counts:
    """Wait until every job of the phase has a final record (done, failed, skipped or shed); the counts then."""
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    while True:
        now = scrape(urls)
        if now.final_jobs() - before.final_jobs() >= expected_jobs or time.monotonic() > deadline:
            return now
        time.sleep(0.5)


@dataclass(frozen=True)
class Deployment:
    """One configuration under test: the gateway users call, and where its scoring is counted and done."""

    name: str
    target: Target
    gateway: ServerProcess
    metrics: list[str]  # /metrics URLs whose counts add up to the scoring done
    helpers: list[ServerProcess]  # other processes that score for it (a Redis worker)

    def helper_cpu(self) -> float:
        """CPU of the gateway's children (the CPU worker, Oxigraph) and of its helpers' process groups."""
        return (
            group_cpu_seconds(self.gateway.pid)
            - process_cpu_seconds(self.gateway.pid)
            + sum(group_cpu_seconds(helper.pid) for helper in self.helpers)
        )

    def all_cpu(self) -> float:
        return group_cpu_seconds(self.gateway.pid) + sum(group_cpu_seconds(helper.pid) for helper in self.helpers)


@dataclass
class Phase:
    config: str
    mode: str
    sent: int
    seconds: float
    latencies: list[float]
    scored: float = 0.0  # records done during the load
    done_total: float = 0.0  # records done during the load and the drain after it
    shed: float = 0.0
    scoring_calls: float = 0.0  # the scorers' upstream calls, load and drain
    gateway_cpu: float = 0.0  # seconds, load and drain
    children_cpu: float = 0.0
    other_cores: float = 0.0


def run_phase(deployment: Deployment, mode: str, bodies: list[bytes], args: argparse.Namespace) -> Phase:
    before = scrape(deployment.metrics)
    gateway_before, helpers_before = process_cpu_seconds(deployment.gateway.pid), deployment.helper_cpu()
    all_before, machine_before, own_before = deployment.all_cpu(), machine_busy_seconds(), time.process_time()
    latencies = asyncio.run(open_loop(deployment.target, mode, args.rate, args.seconds, bodies))
    loaded = scrape(deployment.metrics)
    after = wait_drained(deployment.metrics, len(latencies) if mode == "async" else 0, before)
    gateway_cpu = process_cpu_seconds(deployment.gateway.pid) - gateway_before
    helpers_cpu = deployment.helper_cpu() - helpers_before
    ours = deployment.all_cpu() - all_before + time.process_time() - own_before

    def delta(counts: Counts, status: str) -> float:
        return counts.jobs.get(status, 0.0) - before.jobs.get(status, 0.0)

    phase = Phase(
        deployment.name,
        mode,
        len(bodies),
        args.seconds,
        latencies,
        scored=delta(loaded, "done"),
        done_total=delta(after, "done"),
        shed=delta(after, "shed"),
        scoring_calls=after.scoring_calls - before.scoring_calls,
        gateway_cpu=gateway_cpu,
        children_cpu=max(helpers_cpu, 0.0),
    )
    # the fake upstream (and Redis) count as "other" too: a few % of a core at these rates
    phase.other_cores = max(machine_busy_seconds() - machine_before - ours, 0.0) / args.seconds
    print(
        f"  {deployment.name:<8} {mode:<5} {len(latencies)}/{len(bodies)} ok  p50 {pct(latencies, 0.5):6.1f} ms  "
        f"p99 {pct(latencies, 0.99):7.1f} ms  scored {phase.scored:.0f} (+{phase.done_total - phase.scored:.0f} "
        f"in the drain)  shed {phase.shed:.0f}  gateway CPU {gateway_cpu:.1f} s  children "
        f"{phase.children_cpu:.1f} s  other {phase.other_cores:.2f} cores",
        flush=True,
    )
    return phase


def warm_up(deployment: Deployment, bodies: list[bytes], args: argparse.Namespace) -> None:
    """A few requests of each mode, so that no phase pays for first uses (imports, connections, caches)."""
    before = scrape(deployment.metrics)
    asyncio.run(open_loop(deployment.target, "off", args.rate, len(bodies) / args.rate, bodies))
    sent = asyncio.run(open_loop(deployment.target, "async", args.rate, len(bodies) / args.rate, bodies))
    wait_drained(deployment.metrics, len(sent), before)


def gateway_yaml(
    workdir: Path,
    upstream_port: int,
    port: int,
    name: str,
    arrangement: Arrangement,
    args: argparse.Namespace,
    redis_url: str | None,
) -> Path:
    queue: dict[str, object] = {"max_size": args.queue, "concurrency": 4}
    if redis_url is not None:
        queue.update(backend="redis", redis_url=redis_url)
    return write_yaml(
        workdir / f"{name}.yaml",
        {
            "model_list": model_list(upstream_port),
            "general_settings": {"master_key": MASTER_KEY},
            "trustgate": {
                "server": {"host": "127.0.0.1", "port": port},
                "scoring": {
                    "data_dir": str(DATA_DIR),
                    "mode": "async",
                    "queue": queue,
                    "worker": arrangement.worker,
                    "cpu": {"processes": arrangement.processes, "nice": 10},
                    "consistency": {"seed": 1},
                },
                "store": {"path": str(workdir / f"{name}.sqlite3")},
            },
        },
    )


def deploy(
    stack: contextlib.ExitStack,
    name: str,
    upstream_port: int,
    workdir: Path,
    args: argparse.Namespace,
    redis_url: str | None,
) -> Deployment:
    """Start one configuration: the gateway, and for the Redis queue one ``trustgate worker`` beside it."""
    port = free_port()
    config = gateway_yaml(workdir, upstream_port, port, name, CONFIGS[name], args, redis_url)
    server = stack.enter_context(
        running(gateway(config, name, workdir), f"http://127.0.0.1:{port}/health/liveness", timeout=240)
    )
    target = Target(name, f"http://127.0.0.1:{port}", MASTER_KEY, GROUP)
    metrics, helpers = [f"{target.base_url}/metrics"], []
    if redis_url is not None:
        metrics_port = free_port()
        helper = ServerProcess(
            f"{name}-worker",
            [str(TRUSTGATE), "worker", "--config", str(config), "--metrics-port", str(metrics_port)],
            workdir / f"{name}-worker.log",
        )
        stack.callback(helper.stop)
        wait_started(helper.start())
        metrics.append(f"http://127.0.0.1:{metrics_port}/metrics")
        helpers.append(helper)
    return Deployment(name, target, server, metrics, helpers)


@dataclass(frozen=True)
class ScoringCost:
    """What scoring added per scored answer, beyond the same requests' cost with scoring off."""

    gateway_cpu: float  # seconds, in the gateway process (its event loop, and its threads when processes is 0)
    children_cpu: float  # seconds, elsewhere: the gateway's children (CPU worker, Oxigraph), a Redis worker
    calls: float  # the scorers' upstream calls


def scoring_cost(scored_phase: Phase, off_phase: Phase) -> ScoringCost:
    per_request = off_phase.gateway_cpu / max(len(off_phase.latencies), 1)
    scored = max(scored_phase.done_total, 1.0)
    return ScoringCost(
        (scored_phase.gateway_cpu - per_request * len(scored_phase.latencies)) / scored,
        (scored_phase.children_cpu - off_phase.children_cpu) / scored,
        scored_phase.scoring_calls / scored,
    )


def report(phases: list[Phase], args: argparse.Namespace) -> str:
    lines = [
        f"Command: `{COMMAND} --configs {args.configs}` (rate {args.rate:g}/s, {args.seconds:g} s phases, "
        f"queue {args.queue}), "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs",
        "",
        "| scoring runs | scoring | requests ok | p50 ms | p99 ms | scored/s | shed | gateway CPU ms per request "
        "| scoring's CPU ms per scored answer: gateway process | elsewhere | scoring calls per scored "
        "answer | other programs (cores) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for index, phase in enumerate(phases):
        cost = ["", "", ""]
        if phase.mode == "async":
            spent = scoring_cost(phase, phases[index - 1])
            cost = [
                f"{spent.gateway_cpu * 1000:.1f}",
                f"{max(spent.children_cpu, 0.0) * 1000:.1f}",
                f"{spent.calls:.2f}",
            ]
        per_request = 1000 * phase.gateway_cpu / max(len(phase.latencies), 1)
        lines.append(
            f"| {phase.config} | {phase.mode} | {len(phase.latencies)}/{phase.sent} | "
            f"{pct(phase.latencies, 0.5):.1f} | {pct(phase.latencies, 0.99):.1f} | "
            f"{phase.scored / phase.seconds:.2f} | {phase.shed:.0f} | {per_request:.2f} | "
            f"{' | '.join(cost)} | {phase.other_cores:.2f} |"
        )
    lines += [
        "",
        f"User latency, both async phases against both off phases (target: p99 ratio ≤ {TARGET_P99_RATIO}):",
        "",
        "| scoring runs | p50 off | p50 async | p99 off | p99 async | p99 ratio | target |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for config in dict.fromkeys(phase.config for phase in phases):
        off = [x for p in phases if p.config == config and p.mode == "off" for x in p.latencies]
        scored = [x for p in phases if p.config == config and p.mode == "async" for x in p.latencies]
        ratio = pct(scored, 0.99) / pct(off, 0.99)
        lines.append(
            f"| {config} | {pct(off, 0.5):.1f} | {pct(scored, 0.5):.1f} | {pct(off, 0.99):.1f} | "
            f"{pct(scored, 0.99):.1f} | {ratio:.2f} | {'met' if ratio <= TARGET_P99_RATIO else 'not met'} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=40.0, help="user requests per second, every phase")
    parser.add_argument("--seconds", type=float, default=30.0, help="length of each phase")
    parser.add_argument("--queue", type=int, default=64, help="the scoring queue's max_size")
    parser.add_argument(
        "--configs",
        default=DEFAULT_CONFIGS,
        help=f"comma-separated, in turn order, of {', '.join(CONFIGS)} (default: {DEFAULT_CONFIGS})",
    )
    args = parser.parse_args()
    chosen = [name.strip() for name in args.configs.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in CONFIGS]
    if unknown or not chosen:
        parser.error(f"--configs: choose among {', '.join(CONFIGS)} (not {', '.join(unknown) or 'none'})")
    if not assets_ready():
        return 2
    per_phase = int(args.rate * args.seconds)
    bodies = questions(4 * per_phase + WARM_UP_REQUESTS)
    phases: list[Phase] = []
    with tempfile.TemporaryDirectory(prefix="trustgate-isolation-bench-") as tmp, contextlib.ExitStack() as stack:
        workdir = Path(tmp)
        upstream_port = free_port()
        stack.enter_context(running(upstream(upstream_port, workdir), f"http://127.0.0.1:{upstream_port}/v1/models"))
        redis_server = RedisServer(workdir).start()
        stack.callback(redis_server.stop)
        deployments = [
            deploy(stack, name, upstream_port, workdir, args, redis_server.url if name == REDIS_CONFIG else None)
            for name in chosen
        ]
        for deployment in deployments:
            warm_up(deployment, bodies[-WARM_UP_REQUESTS:], args)
        # Configurations take turns, so that whatever else the machine does falls on all alike.
        for round_index in range(2):
            for deployment in deployments:
                for mode_index, mode in enumerate(("off", "async")):
                    start = (2 * round_index + mode_index) * per_phase
                    phases.append(run_phase(deployment, mode, bodies[start : start + per_phase], args))
    print()
    print(report(phases, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
