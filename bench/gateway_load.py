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
import asyncio
import contextlib
import dataclasses
import datetime as dt
import json
import math
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import httpx
import yaml

from bench import regressions

REPO = Path(__file__).resolve().parent.parent
BENCH_VENV = REPO / ".bench-venv"
LITELLM_SPEC = "litellm[proxy]==1.106.2"
LITELLM_VERSION = LITELLM_SPEC.rsplit("==", 1)[1]
SECTION_TITLE = "## Gateway overhead vs LiteLLM proxy (issue: gateway core)"
COMMAND = ".venv/bin/python -m bench.gateway_load"

MASTER_KEY = "sk-bench-master"
UPSTREAM_KEY = "sk-bench-upstream"
GROUP = "fake"
WIRE_MODEL = "gpt-4o-mini"
MESSAGES = [{"role": "user", "content": "Say hello in one short sentence."}]

# The aim, TrustGate relative to LiteLLM's proxy.
AIM_THROUGHPUT_RATIO = 3.0
AIM_ADDED_LATENCY_RATIO = 1 / 3

# Below this many busy cores (between phases, servers idle) the machine counts as quiet.
QUIET_CORES = 0.2
# A phase during which other programs used more than this many cores is measured again.
NOISY_CORES = 0.3
# The longest wait for quiet before one phase.
QUIET_WAIT_SECONDS = 20.0
# The fake upstream's answer time: its mean, and how far either side of it each answer's is drawn.
UPSTREAM_DELAY_MS = 12.0
UPSTREAM_JITTER_MS = 6.0
# Warm-up before each round after the first: the closed loop opens new connections each phase.
ROUND_WARMUP_SECONDS = 1.0

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class BenchError(RuntimeError):
    """A target could not be set up or did not answer correctly; the run stops."""


# --------------------------------------------------------------------------- processes


def free_port() -> int:
    """A currently free loopback port (the OS picks it; the tiny reuse race is acceptable here)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def group_cpu_seconds(pgid: int) -> float:
    """User+system CPU of every live process in a process group (Linux /proc; 0.0 elsewhere).

    Servers run in their own session, so their group holds the server and any
    worker it forks; summing the group keeps that accounting honest.
    """
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = _stat_fields(stat)
            if int(fields[2]) == pgid:  # fields[0] is the state, [2] the process group
                total += _cpu_ticks(fields)
    return total / CLOCK_TICKS


def process_cpu_seconds(pid: int) -> float:
    """User+system CPU of one process (all its threads, none of its children), from /proc."""
    return _cpu_ticks(_stat_fields(Path(f"/proc/{pid}/stat"))) / CLOCK_TICKS


def _stat_fields(stat: Path) -> list[str]:
    """``/proc/PID/stat`` after the command name (which may hold spaces): field 3 of proc(5) is index 0."""
    return stat.read_text().rsplit(")", 1)[1].split()


def _cpu_ticks(fields: list[str]) -> int:
    return int(fields[11]) + int(fields[12])  # utime, stime


def machine_busy_seconds() -> float:
    """CPU time the whole machine spent busy (all cores, steal included), from /proc/stat.

    Minus what the benchmark's own processes used, this is what other programs
    took during a phase: on a shared two-core machine that is the noise figure.
    """
    with contextlib.suppress(OSError, IndexError, ValueError):
        user, nice, system, _idle, _iowait, irq, softirq, steal = (
            int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]
        )
        return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS
    return math.nan


def wait_for_quiet(max_seconds: float, threshold_cores: float = QUIET_CORES) -> float:
    """Wait (at most ``max_seconds``) until the machine is nearly idle; return the last load seen.

    Called between phases, when the benchmark's own servers are idle, so any
    busy CPU belongs to other programs that would otherwise skew the phase.
    """
    deadline = time.monotonic() + max_seconds
    while True:
        before = machine_busy_seconds()
        time.sleep(1.0)
        cores = machine_busy_seconds() - before
        if not cores > threshold_cores or time.monotonic() >= deadline:  # NaN (no /proc) counts as quiet
            return cores


@dataclass
class ServerProcess:
    """A server started in its own session, so that stopping it stops its whole process group."""

    name: str
    argv: list[str]
    log_path: Path
    env: dict[str, str] | None = None
    cwd: Path = REPO
    popen: subprocess.Popen[bytes] | None = None

    def start(self) -> ServerProcess:
        with self.log_path.open("wb") as log:
            self.popen = subprocess.Popen(
                self.argv,
                cwd=self.cwd,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        return self

    @property
    def pid(self) -> int:
        assert self.popen is not None, "not started"
        return self.popen.pid

    def cpu_seconds(self) -> float:
        return group_cpu_seconds(self.pid)

    def log_tail(self, lines: int = 40) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def wait_ready(self, url: str, timeout: float) -> None:
        """Poll ``url`` until it answers 200; fail early (with the log) if the process dies."""
        deadline = time.monotonic() + timeout
        with httpx.Client(timeout=2.0) as client:
            while time.monotonic() < deadline:
                if self.popen is not None and self.popen.poll() is not None:
                    raise BenchError(f"{self.name} exited with {self.popen.returncode}:\n{self.log_tail()}")
                with contextlib.suppress(httpx.HTTPError):
                    if client.get(url).status_code == 200:
                        return
                time.sleep(0.2)
        raise BenchError(f"{self.name} not ready at {url} after {timeout:.0f}s:\n{self.log_tail()}")

    def stop(self) -> None:
        """SIGTERM the group, give it a grace period, then SIGKILL whatever of it is left.

        The group, not only the process: a server that forked workers must not
        leave them behind, even when the server itself has already exited.
        """
        if self.popen is None:
            return
        self._signal_group(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=10.0)
        self._signal_group(signal.SIGKILL)
        self.popen.wait(timeout=5.0)

    def _signal_group(self, sig: signal.Signals) -> None:
        assert self.popen is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, sig)


@contextlib.contextmanager
def running(server: ServerProcess, ready_url: str, timeout: float = 120.0) -> Iterator[ServerProcess]:
    """Start a server, wait until it answers, and always stop it (and its group) afterwards."""
    try:
        server.start().wait_ready(ready_url, timeout)
        yield server
    finally:
        server.stop()


# --------------------------------------------------------------------------- targets


@dataclass(frozen=True)
class Target:
    """Where the load goes: a base URL, the key it wants, the model name it expects."""

    name: str
    base_url: str
    api_key: str
    model: str

    def body(self, stream: bool) -> dict[str, object]:
        return {"model": self.model, "messages": MESSAGES, "stream": stream}

    @property
    def headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.api_key}"}


def model_list(upstream_port: int) -> list[dict[str, object]]:
    """The one deployment both gateways get: model group ``fake`` → the fake upstream."""
    return [
        {
            "model_name": GROUP,
            "litellm_params": {
                "model": f"openai/{WIRE_MODEL}",
                "api_base": f"http://127.0.0.1:{upstream_port}/v1",
                "api_key": UPSTREAM_KEY,
                "timeout": 30,
            },
        }
    ]


def write_yaml(path: Path, content: dict[str, object]) -> Path:
    path.write_text(yaml.safe_dump(content, sort_keys=False))
    return path


def fake_upstream(port: int, delay_ms: float, workdir: Path, jitter_ms: float = 0.0) -> ServerProcess:
    """The fake upstream on uvicorn's h11, named here because every committed figure was taken on it.

    Its server's implementation moves the stream ratio on this machine: on httptools,
    the same gateway's stream throughput against it was 0.73× instead of about 0.9×
    (BENCHMARKS.md), with the fake's writes on the wire the same. ``jitter_ms``
    spreads its answer times (``--delay-jitter-ms``).
    """
    argv = [
        sys.executable,
        "-m",
        "tests.fake_upstream",
        "--port",
        str(port),
        "--delay-ms",
        str(delay_ms),
        "--delay-jitter-ms",
        str(jitter_ms),
        "--http",
        "h11",
    ]
    return ServerProcess("fake upstream", argv, workdir / "upstream.log")


def trustgate_server(port: int, upstream_port: int, workdir: Path) -> ServerProcess:
    """The gateway core alone (``trustgate_config``), served on ``port``."""
    config = write_yaml(workdir / "trustgate.yaml", trustgate_config(port, upstream_port, workdir))
    trustgate = Path(sys.executable).with_name("trustgate")
    argv = [str(trustgate), "serve", "--config", str(config), "--log-level", "warning", "--no-access-log"]
    return ServerProcess("trustgate", argv, workdir / "trustgate.log")


def trustgate_config(port: int, upstream_port: int, workdir: Path) -> dict[str, object]:
    """The gateway core alone: pass-through path, scoring off, its record store in the temp dir.

    Scoring is off because this measures what the proxy itself adds, like for
    like with LiteLLM's proxy, which does not score.
    """
    return {
        "model_list": model_list(upstream_port),
        "general_settings": {"master_key": MASTER_KEY},
        "trustgate": {
            "server": {"host": "127.0.0.1", "port": port},
            "passthrough": True,
            "scoring": {"mode": "off", "consistency": {"enabled": False}, "factcheck": {"enabled": False}},
            "store": {"path": str(workdir / "trust-records.sqlite3")},
        },
    }


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


# --------------------------------------------------------------------------- load


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


# --------------------------------------------------------------------------- run


def run_target(
    target: Target, options: Options, processes: dict[str, ServerProcess], allowance: NoiseAllowance
) -> list[LoadResult]:
    check_answers(target)
    modes = [False, True] if options.stream_seconds > 0 else [False]
    return [
        measure_phase(target, stream=stream, options=options, processes=processes, allowance=allowance)
        for stream in modes
    ]


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


# --------------------------------------------------------------------------- report


def _fmt(value: float, digits: int = 1) -> str:
    return "n/a" if math.isnan(value) else f"{value:.{digits}f}"


def _find(results: list[LoadResult], target: str, stream: bool) -> LoadResult | None:
    return next((r for r in results if r.target == target and r.stream == stream), None)


def results_table(results: list[LoadResult]) -> str:
    header = (
        "| target | mode | requests | errors | req/s | p50 ms | p99 ms | added p50 ms | added p99 ms "
        "| gateway CPU ms/req | upstream CPU ms/req | load-gen CPU ms/req | other programs (cores) |"
    )
    rows = [header, "|" + "---|" * header.count(" | ") + "---|"]
    for result in results:
        base = _find(results, "direct", result.stream)
        added = [
            (result.percentile_ms(q) - base.percentile_ms(q)) if base and result is not base else math.nan
            for q in (0.5, 0.99)
        ]
        cells = [
            result.target,
            "stream" if result.stream else "non-stream",
            str(len(result.latencies)),
            str(result.errors),
            _fmt(result.throughput),
            _fmt(result.percentile_ms(0.5)),
            _fmt(result.percentile_ms(0.99)),
            _fmt(added[0]),
            _fmt(added[1]),
            _fmt(result.cpu_ms_per_request("gateway"), 2),
            _fmt(result.cpu_ms_per_request("upstream"), 2),
            _fmt(result.cpu_ms_per_request("loadgen"), 2),
            _fmt(result.other_cores, 2),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def ratios_table(results: list[LoadResult]) -> str:
    """TrustGate relative to LiteLLM's proxy, against the issue's aim (≥3× throughput, ≤1/3 added latency)."""
    rows = [
        "| mode | throughput ratio (aim ≥ 3) | added p50 ratio (aim ≤ 0.33) | added p99 ratio "
        "| gateway CPU/req ratio |",
        "|---|---|---|---|---|",
    ]
    for stream in (False, True):
        ours, theirs, base = (_find(results, name, stream) for name in ("trustgate", "litellm-proxy", "direct"))
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


def environment(options: Options) -> str:
    loop = "uvloop" if _has_module("uvloop") else "asyncio"
    return (
        f"{machine_line()} · TrustGate event loop: {loop} · "
        f"LiteLLM proxy {LITELLM_VERSION} (uvicorn, 1 worker, no database) · "
        f"{load_line(options, 'direct and TrustGate')}"
    )


def _has_module(name: str) -> bool:
    import importlib.util

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
        ours, base = _find(results, "trustgate", stream), _find(results, "direct", stream)
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


# --------------------------------------------------------------------------- main


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


def _parse(argv: Sequence[str] | None) -> tuple[Options, argparse.Namespace]:
    parser = argparse.ArgumentParser(
        prog="python -m bench.gateway_load", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_load_options(parser)
    parser.add_argument("--output", type=Path, default=REPO / "BENCHMARKS.md")
    parser.add_argument("--no-write", action="store_true", help="print only; leave BENCHMARKS.md alone")
    args = parser.parse_args(argv)
    return load_options(parser, args), args


def raise_on_sigterm(signum: int, frame: object) -> None:
    """A SIGTERM handler that raises, so that the ``finally`` blocks of ``running`` stop every server."""
    raise SystemExit(128 + signum)


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
