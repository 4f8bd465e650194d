"""The embedded default (``make serve``) as a newcomer meets it: scores within the sync timeout?

Run from the repository root (after ``make install``)::

    .venv/bin/python -m bench.embedded_default

One ``trustgate serve`` process on the default config (``proxy/config/default_config.yaml``:
the local llama.cpp server with SmolLM2-135M, the real scorers), moved to free
ports only. Phases, one after the other, each on ten short factual questions:

1. sync: one request at a time with ``x-trustgate-mode: sync``; how many come
   back ``x-trust-status: done`` with ``x-trust-score``, and how long each took;
2. async: one request at a time, then the record polled until it is final; time
   from the request to the final record;
3. sync right after async: five async requests at once, then ten
   sync ones one after the other; how many come back ``done`` within
   ``sync_timeout_s`` (sync jobs go ahead of the async backlog), and whether the
   async jobs are all scored afterwards (delayed, never dropped);
4. user latency, scoring off vs on: the same questions with ``x-trustgate-mode:
   off`` while nothing else runs, then while a backlog of scoring jobs keeps the
   single-slot model busy (user calls go ahead of queued scoring calls).

Prints a Markdown report (and ``--json`` writes the raw figures).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from bench.harness.cpu import process_cpu_seconds
from tests.e2e.gateway_process import GatewayProcess, serve_default_config
from tests.e2e.sync_after_async import AUTH, ask, overtaken, sync_after_async, wait_all_final

COMMAND = ".venv/bin/python -m bench.embedded_default"
QUESTIONS = [
    "What is the capital of France?",
    "Who wrote Romeo and Juliet?",
    "What is the largest planet in the solar system?",
    "Who painted the Mona Lisa?",
    "What is the chemical symbol for gold?",
    "What is the capital of Japan?",
    "Who discovered penicillin?",
    "What is the longest river in Africa?",
    "Who was the first president of the United States?",
    "What language is spoken in Brazil?",
]
BACKLOG_QUESTIONS = [
    "Who invented the telephone?",
    "What is the capital of Italy?",
    "Who wrote Hamlet?",
    "What is the smallest prime number?",
    "Which ocean is the largest?",
    "Who composed the Magic Flute?",
    "What is the capital of Canada?",
    "Who developed the theory of relativity?",
]


def wait_final(url: str, record_id: str, started: float, timeout: float = 300) -> tuple[str, float]:
    while time.perf_counter() - started < timeout:
        record = httpx.get(f"{url}/v1/trust/{record_id}", headers=AUTH, timeout=30).json()
        if record["status"] != "pending":
            return str(record["status"]), time.perf_counter() - started
        time.sleep(0.1)
    return "pending", time.perf_counter() - started


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def cpu_seconds(pids: Sequence[int]) -> float:
    """User + system CPU time of these processes so far."""
    return sum(process_cpu_seconds(pid) for pid in pids)


def sync_phase(url: str, gateway: GatewayProcess) -> dict[str, Any]:
    """Per request also the CPU seconds the model server and the gateway spent: on a shared machine the
    wall time mostly measures the other programs, the CPU time what this request cost."""
    model = [pid for pid in gateway.children() if b"llama_cpp.server" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    rows = []
    for question in QUESTIONS:
        model_before, gateway_before = cpu_seconds(model), cpu_seconds([gateway.process.pid])
        response, seconds = ask(url, question, "sync")
        record = httpx.get(f"{url}/v1/trust/{response.headers['x-trust-id']}", headers=AUTH).json()
        rows.append(
            {
                "question": question,
                "seconds": seconds,
                "status": response.headers.get("x-trust-status"),
                "score": response.headers.get("x-trust-score"),
                "components": {name: c.get("error") or "ok" for name, c in record["components"].items()},
                "model_cpu_s": cpu_seconds(model) - model_before,
                "gateway_cpu_s": cpu_seconds([gateway.process.pid]) - gateway_before,
            }
        )
    return {
        "rows": rows,
        "done_with_score": sum(r["status"] == "done" and r["score"] is not None for r in rows),
        "bc_scored": sum(r["components"].get("bc") == "ok" for r in rows),
    }


def async_phase(url: str) -> dict[str, Any]:
    rows = []
    for question in QUESTIONS:
        started = time.perf_counter()
        response, _ = ask(url, question, "async")
        status, seconds = wait_final(url, response.headers["x-trust-id"], started)
        rows.append({"question": question, "seconds": seconds, "status": status})
    return {"rows": rows}


def sync_after_async_phase(url: str) -> dict[str, Any]:
    """The target: of 10 sync requests sent right after 5 async ones, at least 9 ``done``."""
    overtaken_before = overtaken(url)
    run = sync_after_async(url)
    started = time.perf_counter()
    statuses = [record["status"] for record in wait_all_final(url, run.async_ids)]
    return {
        "sync": [{"status": r.status, "seconds": r.seconds} for r in run.sync],
        "done": run.done,
        "async_statuses": statuses,
        "async_drain_s": time.perf_counter() - started,
        "overtaken": overtaken(url) - overtaken_before,
    }


def latency_phase(url: str) -> dict[str, Any]:
    idle = [ask(url, q, "off")[1] for q in QUESTIONS]
    with ThreadPoolExecutor(len(BACKLOG_QUESTIONS)) as pool:
        backlog = list(pool.map(lambda q: ask(url, q, "async")[0].headers["x-trust-id"], BACKLOG_QUESTIONS))
    scoring_calls_before = scoring_calls(url)
    busy = [ask(url, q, "off")[1] for q in QUESTIONS]
    calls_during = scoring_calls(url) - scoring_calls_before
    still_pending = sum(httpx.get(f"{url}/v1/trust/{i}", headers=AUTH).json()["status"] == "pending" for i in backlog)
    return {
        "idle": idle,
        "busy": busy,
        "scoring_calls_during": calls_during,
        "backlog_still_pending_after": still_pending,
        "backlog": len(backlog),
    }


def scoring_calls(url: str) -> float:
    text = httpx.get(f"{url}/metrics").text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("trustgate_upstream_calls_total{") and 'purpose="user"' not in line
    )


def summary(values: Sequence[float]) -> str:
    return f"{percentile(values, 0.5):.1f} | {percentile(values, 0.9):.1f} | {max(values):.1f}"


def report(figures: dict[str, Any]) -> str:
    sync, records, latency, first = figures["sync"], figures["async"], figures["latency"], figures["sync_first"]
    sync_seconds = [r["seconds"] for r in sync["rows"]]
    record_seconds = [r["seconds"] for r in records["rows"] if r["status"] == "done"]
    idle, busy = latency["idle"], latency["busy"]
    lines = [
        f"Command: `{COMMAND}`",
        "",
        f"{figures['when']} · {os.cpu_count()} CPUs ({platform.machine()}) · Python {platform.python_version()} · "
        f"load average before the run {figures['load_before']}",
        "",
        "| phase | n | result | p50 s | p90 s | max s |",
        "|---|---|---|---|---|---|",
        f"| sync request → response with score | {len(sync_seconds)} | {sync['done_with_score']} of "
        f"{len(sync_seconds)} `done` with `x-trust-score` | {summary(sync_seconds)} |",
        f"| · of which CPU seconds of the model server | {len(sync_seconds)} | | "
        f"{summary([r['model_cpu_s'] for r in sync['rows']])} |",
        f"| · of which CPU seconds of the gateway | {len(sync_seconds)} | | "
        f"{summary([r['gateway_cpu_s'] for r in sync['rows']])} |",
        f"| async request → final record | {len(records['rows'])} | "
        f"{len(record_seconds)} `done` | {summary(record_seconds or [float('nan')])} |",
        f"| sync request right after 5 async ones → response | {len(first['sync'])} | {first['done']} of "
        f"{len(first['sync'])} `done` within `sync_timeout_s` (target ≥ 9); the 5 async records then: "
        f"{', '.join(first['async_statuses'])}, final {first['async_drain_s']:.0f} s after the last sync reply; "
        f"{first['overtaken']:.0f} async passes counted | {summary([r['seconds'] for r in first['sync']])} |",
        f"| user request, scoring off (idle model) | {len(idle)} | | {summary(idle)} |",
        f"| user request while {latency['backlog']} scoring jobs wait | {len(busy)} | "
        f"{latency['scoring_calls_during']:.0f} scoring calls ran meanwhile; "
        f"{latency['backlog_still_pending_after']} jobs still pending after | {summary(busy)} |",
        "",
        f"User latency with scoring on / off: p50 {percentile(busy, 0.5) / percentile(idle, 0.5):.2f}×, "
        f"p90 {percentile(busy, 0.9) / percentile(idle, 0.9):.2f}×.",
        "",
        f"Sync: Trust_BC finished in {sync['bc_scored']} of {len(sync_seconds)}{_others(sync['rows'])}.",
        f"Load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}.",
    ]
    return "\n".join(lines)


def _others(rows: list[dict[str, Any]]) -> str:
    """What Trust_BC's component said where it did not finish, if anywhere."""
    others = sorted({str(r["components"].get("bc")) for r in rows} - {"ok"})
    return f" (the others: {', '.join(others)})" if others else ""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the raw figures here")
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_before": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    with tempfile.TemporaryDirectory() as folder, serve_default_config(Path(folder)) as gateway:
        ask(gateway.url, "Hello", "off")  # warm the model's first call
        phases = (
            ("sync", lambda: sync_phase(gateway.url, gateway)),
            ("async", lambda: async_phase(gateway.url)),
            ("sync_first", lambda: sync_after_async_phase(gateway.url)),
            ("latency", lambda: latency_phase(gateway.url)),
        )
        for name, phase in phases:
            started = time.perf_counter()
            figures[name] = phase()
            print(f"phase {name}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
        print(report(figures))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
