"""The gateway app's own CPU per request, in-process, for two or more versions side by side.

    .venv/bin/python -m bench.app_cpu --checkout /tmp/before --checkout . --rounds 4
    .venv/bin/python -m bench.app_cpu --unpriced . --checkout . --rounds 4   # what spend tracking costs

``bench.gateway_ab`` measures whole gateways under load: its CPU per request
includes the server, the sockets and every wake-up, and on a small shared
machine it moves by ±10% between rounds of the same code, more than most single
changes to the request path. This measures only what the request path itself
costs: each version's ASGI app (``create_app``, the pass-through path, scoring
off, as ``bench.harness.servers`` configures it) is called directly, with no HTTP
server, by 10 concurrent callers in one process, each sending its next request
when its last is answered; the process's CPU time over ``--requests`` requests
(after a warm-up) is divided by their number. The upstream is the fake one
(``tests.fake_upstream``), answering after 2 ± 1 ms, over real sockets: the
app's upstream client, its timers and its reading of the reply are measured
too. The scope carries the server's ``Departure`` where the version has one,
as the gateway's own protocol gives it.

Each version runs in a process of its own (its sources on ``PYTHONPATH``), the
versions taking turns in every round, the order reversed every other round.
Read the medians, and whether the rounds agree. An ``--unpriced`` version runs
with no price on its deployment (spend tracking off; ``bench.gateway_ab``).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import MutableMapping, Sequence
from pathlib import Path
from typing import Any

MODES = ("non-stream", "stream")
CONCURRENCY = 10
WARMUP_REQUESTS = 500
UPSTREAM_DELAY_MS = 2.0
UPSTREAM_JITTER_MS = 1.0


def main(argv: Sequence[str] | None = None) -> int:
    # Imported here: the child (``_measure``) runs from another version's sources, where these may differ.
    from bench.gateway_ab import versions, versions_parser
    from bench.harness.processes import free_port, running
    from bench.harness.servers import GROUP, MASTER_KEY, fake_upstream, trustgate_config, write_yaml

    parser = versions_parser("bench.app_cpu", __doc__, rounds=4)
    parser.add_argument("--requests", type=int, default=6000, help="measured requests per version, round and mode")
    args = parser.parse_args(argv)
    measured = versions(parser, args)
    results: dict[tuple[int, str], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="trustgate-app-cpu-") as tmp:
        workdir = Path(tmp)
        upstream_port = free_port()
        configs = {
            priced: write_yaml(
                workdir / f"trustgate-{'priced' if priced else 'unpriced'}.yaml",
                trustgate_config(free_port(), upstream_port, workdir, priced),
            )
            for priced in (True, False)
        }
        with running(
            fake_upstream(upstream_port, UPSTREAM_DELAY_MS, workdir, UPSTREAM_JITTER_MS),
            f"http://127.0.0.1:{upstream_port}/v1/models",
            timeout=30,
        ):
            for round_ in range(args.rounds):
                order = list(enumerate(measured))
                for mode in MODES:
                    for index, version in order if round_ % 2 == 0 else order[::-1]:
                        config = configs[version.priced]
                        cpu_us = _run_child(
                            version.checkout, [str(config), mode, str(args.requests), GROUP, MASTER_KEY]
                        )
                        results.setdefault((index, mode), []).append(cpu_us)
                        print(f"round {round_ + 1} {mode:10} {version}: {cpu_us:.1f} µs", flush=True)
    print()
    print("| version | mode | app CPU µs per request, median | vs 1 | rounds |")
    print("|---|---|---|---|---|")
    for mode in MODES:
        first = statistics.median(results[(0, mode)])
        for index, version in enumerate(measured):
            values = results[(index, mode)]
            print(
                f"| {index + 1} ({version}) | {mode} | {statistics.median(values):.1f} | "
                f"{statistics.median(values) / first:.2f} | {', '.join(f'{v:.1f}' for v in values)} |"
            )
    return 0


def _run_child(checkout: Path, child_args: list[str]) -> float:
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", *child_args]
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        cwd=checkout,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(checkout), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    if done.returncode != 0:
        raise SystemExit(f"{checkout} ({' '.join(child_args[1:2])}) failed:\n{done.stderr[-4000:]}")
    cpu_us: float = json.loads(done.stdout.strip().splitlines()[-1])["cpu_us"]
    return cpu_us


def _measure(config: str, mode: str, requests: int, group: str, key: str) -> float:
    """CPU µs per request of the app of the sources in the working directory (run as the child process)."""
    import proxy

    if not Path(proxy.__file__ or "").resolve().is_relative_to(Path.cwd()):
        raise SystemExit(f"proxy was imported from {proxy.__file__}, not from the version in {Path.cwd()}")
    from proxy import create_app, load_settings  # public names: the same in every version measured

    try:
        from proxy.server.connections import DEPARTURE, Departure
    except ImportError:  # a version from before the server reported a client's departure
        departure = None
    else:
        departure = (DEPARTURE, Departure)

    app = create_app(load_settings(config))
    body = json.dumps(
        {
            "model": group,
            "messages": [{"role": "user", "content": "Say hello in one short sentence."}],
            "stream": mode == "stream",
        }
    ).encode()
    headers = [
        (b"host", b"127.0.0.1"),
        (b"authorization", f"Bearer {key}".encode()),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]

    async def one() -> None:
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "server": ("127.0.0.1", 4000),
            "client": ("127.0.0.1", 50000),
            "scheme": "http",
            "method": "POST",
            "root_path": "",
            "path": "/v1/chat/completions",
            "raw_path": b"/v1/chat/completions",
            "query_string": b"",
            "headers": list(headers),
            "state": {},
        }
        if departure is not None:
            scope[departure[0]] = departure[1]()
        sent: list[MutableMapping[str, Any]] = []
        answered = asyncio.Event()
        body_read = False

        async def receive() -> dict[str, Any]:
            nonlocal body_read
            if not body_read:
                body_read = True
                return {"type": "http.request", "body": body, "more_body": False}
            await answered.wait()
            return {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            sent.append(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                answered.set()

        await app(scope, receive, send)
        assert sent and sent[0]["status"] == 200, sent[:1]

    async def callers(count: int) -> None:
        async def caller(share: int) -> None:
            for _ in range(share):
                await one()

        await asyncio.gather(*(caller(count // CONCURRENCY) for _ in range(CONCURRENCY)))

    async def run() -> float:
        async with app.router.lifespan_context(app):
            await callers(WARMUP_REQUESTS)
            gc.collect()
            started = time.process_time()
            await callers(requests)
            return 1e6 * (time.process_time() - started) / (requests // CONCURRENCY * CONCURRENCY)

    return asyncio.run(run())


if __name__ == "__main__" and sys.argv[1:2] == ["--child"]:
    del sys.path[0]  # this file's folder: the child imports only the version it measures
    config_path, child_mode, child_requests, child_group, child_key = sys.argv[2:7]
    print(json.dumps({"cpu_us": _measure(config_path, child_mode, int(child_requests), child_group, child_key)}))
elif __name__ == "__main__":
    sys.exit(main())
