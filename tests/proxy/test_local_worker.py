"""The local scoring worker (``scoring.worker: child``, the memory backend's default), as a real child process:
killed mid-job it fails that job with the reason and the next job is scored by its successor; the gateway's
SIGTERM drains through it; the gateway's SIGKILL takes it along; ``inline`` keeps scoring in the gateway.

``sc`` scores alone (no built assets needed), so the jobs are the fake upstream's re-asks."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client import CollectorRegistry

from proxy import ConfigError, create_app, settings_from_dict
from proxy.trust.local_scoring import WORKER_MODULE
from scoring.queue import SHUTDOWN_ERROR
from tests.e2e.gateway_process import GatewayProcess, free_port, serve_config
from tests.fake_upstream import FakeUpstream
from tests.proxy.metric_samples import metric
from tests.proxy.sampled_agreement import ask, sc_config, scripted
from tests.proxy.scored_gateway import AUTH, record, wait_for_record
from tests.proxy.trust.budget_window import in_one_window
from tests.servers import ServerThread
from tests.waiting import wait_until

pytestmark = pytest.mark.integration


def local_workers(parent: int) -> list[int]:
    """Pids of the local scoring workers whose parent is ``parent``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) != parent:
                continue
            if WORKER_MODULE in (stat.parent / "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(stat.parent.name))
    return found


def niceness(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])  # proc(5) field 19


def chat_async(url: str, content: str) -> httpx.Response:
    return httpx.post(
        f"{url}/v1/chat/completions",
        headers={**AUTH, "x-trustgate-mode": "async"},
        timeout=30,
        json={"model": "fake", "messages": [{"role": "user", "content": content}]},
    )


def test_a_worker_killed_mid_job_fails_that_job_with_the_reason_and_its_successor_scores_the_next(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = sc_config(fake_upstream.url)  # type: ignore[attr-defined]
    gateway = start_gateway(config, scorers=None)
    [worker] = local_workers(os.getpid())
    assert niceness(worker) == min(niceness(os.getpid()) + 10, 19)  # scoring.cpu.nice: users' work goes first
    fake_upstream.responder = scripted("Paris", ["Paris"])
    fake_upstream.delay_ms = 3000  # the job's re-asks wait at the upstream: the job is in the worker's hands
    first = chat_async(gateway.url, "What is the capital of France?")
    assert first.status_code == 200 and first.headers["x-trust-status"] == "pending"
    assert wait_until(lambda: len(fake_upstream.requests) == 4)  # the user's call and the job's three re-asks
    os.kill(worker, signal.SIGKILL)

    failed = wait_for_record(gateway, first.headers["x-trust-id"], timeout=30)
    assert failed["status"] == "failed"
    # "died (SIGKILL)", as asyncio reads the child's status; in a long test run another test's forgotten
    # subprocess.Popen may reap the worker first when its pid is reused (pid_max 32768), and asyncio then
    # reports status 255: either way the job failed with the worker's end as its reason.
    assert failed["error"] in (
        "scoring worker died (SIGKILL) while scoring",
        "scoring worker exited with status 255 while scoring",
    )
    fake_upstream.delay_ms = 0
    assert wait_until(lambda: len(local_workers(os.getpid())) == 1 and local_workers(os.getpid()) != [worker])
    second = ask(gateway, temperature=0.5)  # sync: waits for the new worker's record
    assert second.headers["x-trust-status"] == "done" and second.headers["x-trust-sc"] == "1.0000"
    assert metric(gateway, "trustgate_scoring_worker_restarts_total") == 1
    assert metric(gateway, "trustgate_scoring_jobs_total", model="fake", status="failed") == 1
    assert metric(gateway, "trustgate_scoring_jobs_total", model="fake", status="done") == 1


def test_every_restart_is_counted_kills_during_start_up_included(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    """Five SIGKILLs: the running worker's, then each successor's as soon as it exists, while it still starts."""
    gateway = start_gateway(sc_config(fake_upstream.url), scorers=None)  # type: ignore[attr-defined]
    killed: list[int] = []
    for _ in range(5):
        assert wait_until(lambda: bool(set(local_workers(os.getpid())) - set(killed)), timeout=60)
        [worker] = set(local_workers(os.getpid())) - set(killed)
        os.kill(worker, signal.SIGKILL)
        killed.append(worker)
    assert wait_until(lambda: bool(set(local_workers(os.getpid())) - set(killed)), timeout=60)  # the sixth
    assert metric(gateway, "trustgate_scoring_worker_restarts_total") == 5


def test_a_stalled_worker_leaves_a_blocked_key_blocked(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    """The worker stopped (SIGSTOP): every sync wait runs out, the answers have no score, and the block holds."""
    config = sc_config(fake_upstream.url, mode="sync", sync_timeout_s=2.0, queue={"scorer_timeout_s": 1.0})  # type: ignore[attr-defined]
    config["trustgate"]["scoring"]["on_low_trust"] = {"action": "block", "message": "Not now."}
    gateway = start_gateway(config, scorers=None)
    [worker] = local_workers(os.getpid())
    os.kill(worker, signal.SIGSTOP)
    try:
        stalled = ask(gateway)
    finally:
        os.kill(worker, signal.SIGCONT)
    assert stalled.headers["x-trust-status"] == "pending" and stalled.headers["x-trust-action"] == "blocked"
    assert stalled.json()["choices"][0]["message"]["content"] == "Not now."


def test_the_workers_calls_count_on_the_gateways_rate_limits(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    """One deployment rpm for the user's calls (the gateway) and the scorers' (the worker): not one each."""
    config = sc_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["model_list"][0]["litellm_params"]["rpm"] = 3
    config["trustgate"]["retries"] = {"retry_after_cap_s": 0.5}
    gateway = start_gateway(config, scorers=None)
    fake_upstream.responder = scripted("Paris", ["Paris"])
    in_one_window(15)
    response = ask(gateway, temperature=0.5)

    assert response.status_code == 200 and response.headers["x-trust-status"] == "done"
    assert len(fake_upstream.requests) == 3  # the user's call and two of the three samples
    assert record(gateway, response)["components"]["sc"]["details"]["samples_answered"] == 2


def test_inline_scores_in_the_gateway_without_a_worker_process(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    gateway = start_gateway(sc_config(fake_upstream.url, worker="inline"), scorers=None)  # type: ignore[attr-defined]
    fake_upstream.responder = scripted("Paris", ["Paris", "Lyon"])
    response = ask(gateway, temperature=0.5)
    assert response.headers["x-trust-status"] == "done" and response.headers["x-trust-sc"] == "0.6667"
    assert local_workers(os.getpid()) == []


@pytest.mark.parametrize("allow_client_mode", ["lower", "any"])
def test_a_gateway_that_can_score_no_request_loads_no_scorer(
    allow_client_mode: str,
    fake_upstream: FakeUpstream,
    start_gateway: Callable[..., ServerThread],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``scoring.mode: off`` with clients only allowed to lower it: no scoring worker (nor spaCy, vectors, CPU
    pool) is started, and a client's ``sync`` is still refused and counted; allowed to raise it, the same config
    scores that client."""
    config = sc_config(fake_upstream.url, mode="off", allow_client_mode=allow_client_mode)  # type: ignore[attr-defined]
    with caplog.at_level(logging.INFO, logger="trustgate.assembly"):
        gateway = start_gateway(config, scorers=None)
    fake_upstream.responder = scripted("Paris", ["Paris"])
    response = ask(gateway)  # with x-trustgate-mode: sync
    assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"] == "Paris"
    refused = metric(gateway, "trustgate_client_overrides_refused_total", setting="mode", requested="sync")
    told = [r for r in caplog.records if r.getMessage().startswith("no request can be scored")]
    if allow_client_mode == "any":
        assert len(local_workers(os.getpid())) == 1 and not told
        assert response.headers["x-trust-status"] == "done" and refused == 0
    else:
        assert local_workers(os.getpid()) == [] and len(told) == 1
        assert not [h for h in response.headers if h.startswith("x-trust-")]
        assert refused == 1 and len(fake_upstream.requests) == 1  # the answer, no scoring call


def test_an_unknown_worker_arrangement_is_refused(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    with pytest.raises(ConfigError, match="worker"):
        start_gateway(sc_config(fake_upstream.url, worker="thread"), scorers=None)  # type: ignore[attr-defined]


def test_a_worker_that_cannot_load_its_scorers_stops_the_gateways_start_with_the_reason(
    fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    config = sc_config(fake_upstream.url, data_dir=str(tmp_path / "no-assets"))  # type: ignore[attr-defined]
    config["trustgate"]["scoring"]["consistency"] = {"enabled": True}  # Trust_BC needs built assets
    config["trustgate"]["store"] = {"path": str(tmp_path / "records.sqlite3")}
    app = create_app(settings_from_dict(config, {}), registry=CollectorRegistry())

    async def start() -> None:
        async with app.router.lifespan_context(app):
            pass

    with pytest.raises(ConfigError, match="Trust_BC assets are missing"):
        asyncio.run(start())
    assert local_workers(os.getpid()) == []


@pytest.fixture
def sc_config_file(tmp_path: Path, fake_upstream: FakeUpstream) -> Iterator[Callable[..., Path]]:
    """A config file for a ``trustgate serve`` process: sc on the fake upstream, the records under tmp_path."""

    def write(**queue: Any) -> Path:
        config = sc_config(fake_upstream.url, mode="async", queue={"concurrency": 1, **queue})  # type: ignore[attr-defined]
        config["trustgate"].update(server={"port": free_port()}, store={"path": str(tmp_path / "records.sqlite3")})
        path = tmp_path / "config.yaml"
        path.write_text(yaml.safe_dump(config))
        return path

    yield write


def _gone(pid: int) -> bool:
    """No such process, or a zombie (it has exited; its new parent has yet to reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_sigterm_drains_through_the_worker_and_records_the_rest_failed(
    sc_config_file: Callable[..., Path],
    fake_upstream: FakeUpstream,
    tmp_path: Path,
    start_gateway: Callable[..., ServerThread],
) -> None:
    config = sc_config_file(shutdown_grace_s=1.5)
    fake_upstream.responder = scripted("Paris", ["Paris"])
    fake_upstream.delay_ms = 400  # each job: three re-asks at once, 0.4 s; ten jobs outlast the grace period
    with serve_config(config, timeout=120) as served:
        [worker] = local_workers(served.process.pid)
        with concurrent.futures.ThreadPoolExecutor(10) as pool:
            replies = list(pool.map(lambda i: chat_async(served.url, f"What is question {i}?"), range(10)))
        ids = [reply.headers["x-trust-id"] for reply in replies]
        served.process.send_signal(signal.SIGTERM)
        served.process.wait(60)  # uvicorn re-raises the signal once its shutdown is complete
        assert any("Application shutdown complete" in line for line in served.output)
    assert wait_until(lambda: _gone(worker), timeout=10)

    reader = start_gateway(yaml.safe_load(config.read_text()), scorers=[])
    records = [httpx.get(f"{reader.url}/v1/trust/{record_id}", headers=AUTH) for record_id in ids]
    assert [r.status_code for r in records] == [200] * 10  # none lost
    statuses = [(r.json()["status"], r.json()["error"]) for r in records]
    assert set(statuses) <= {("done", None), ("failed", SHUTDOWN_ERROR)}, statuses
    assert ("done", None) in statuses  # the grace period scored what it could, through the worker
    assert ("failed", SHUTDOWN_ERROR) in statuses  # and the rest say why they have no score


def test_sigkill_of_the_gateway_leaves_no_worker_behind(sc_config_file: Callable[..., Path]) -> None:
    with serve_config(sc_config_file(), timeout=120) as served:
        workers = local_workers(served.process.pid)
        assert len(workers) == 1
        GatewayProcess.kill(served)
    assert wait_until(lambda: all(_gone(pid) for pid in workers), timeout=10)
