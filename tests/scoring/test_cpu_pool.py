"""Scoring's CPU work in worker processes: the same results as in threads, crashes contained, no orphans.

Real parts throughout: the spaCy pipeline, small word vectors and a small
evidence index written into a temporary data dir, the fixture knowledge graph
served by a real Oxigraph, and real spawned worker processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import importlib.util
import logging
import multiprocessing
import os
import random
import resource
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import pytest
import yaml

from scoring.children import reap_stale_children, registry_dir
from scoring.consistency.cpu_part import DISTRACTORS, distractor_loader, draw_distractors
from scoring.consistency.paths import asset_paths
from scoring.consistency.scorer import ConsistencyScorer
from scoring.cpu_pool import (
    CpuRecipe,
    CpuTimeExceeded,
    InProcesses,
    InThreads,
    WorkerCrashed,
    _Break,
    _Pool,
    open_cpu_work,
)
from scoring.factcheck.cpu_part import EVIDENCE, evidence_loader, retrieve_evidence
from scoring.pipeline import ScoringPipeline
from scoring.settings import ConsistencySettings, CpuSettings, FactCheckSettings, ScoringSettings
from scoring.types import Failure, ScoringJob
from tests.conftest import gateway_config
from tests.e2e.gateway_process import GatewayProcess, serve_config
from tests.fake_upstream import FakeUpstream
from tests.scoring.consistency.upstream_ask import Answerer, upstream_ask
from tests.scoring.cpu_inputs import long_answer
from tests.waiting import alive, wait_gone, wait_until

pytestmark = pytest.mark.integration

CASES = [
    (
        "which state was returned to spain after the revolutionary war?",  # graph: same-type states
        "Florida was returned to spain after the revolutionary war",
    ),
    ("Who built the first temple for god in jerusalem?", "King Solomon built the first temple for god in jerusalem"),
    ("When did all night long come out lionel richie?", "All night long came out in 1983"),  # numeric
    ("What is the capital of France?", "Paris is the capital of France"),  # evidence in the fact corpus
]


def settings_for(data_dir: Path, **consistency: Any) -> ScoringSettings:
    return ScoringSettings(
        data_dir=data_dir,
        factcheck=FactCheckSettings(default_corpora=[]),
        consistency=ConsistencySettings(seed=1, **consistency),
    )


def recipe(data_dir: Path, endpoint: str, **consistency: Any) -> CpuRecipe:
    settings = settings_for(data_dir, **consistency)
    return CpuRecipe(
        {DISTRACTORS.name: distractor_loader(settings, endpoint), EVIDENCE.name: evidence_loader(settings)}
    )


async def draw_all(processes: int, work_recipe: CpuRecipe) -> list[tuple[Any, ...]]:
    """For each case: the pool's distractors, level, errors, the rng's next draw; and the evidence for it."""
    async with open_cpu_work(work_recipe, CpuSettings(processes=processes)) as cpu:
        assert cpu.has(DISTRACTORS) and cpu.has(EVIDENCE)
        drawn = []
        for question, answer in CASES:
            rng = random.Random(7)
            pool = await draw_distractors(cpu, question, answer, 30, rng)
            evidence = await retrieve_evidence(cpu, f"{question} {answer}", 3)
            drawn.append((pool.distractors, pool.level, pool.errors, rng.random(), evidence))
        return drawn


def test_worker_processes_draw_what_threads_draw_for_the_same_seed(data_dir: Path, graph: str) -> None:
    in_threads = asyncio.run(draw_all(0, recipe(data_dir, graph)))
    in_processes = asyncio.run(draw_all(1, recipe(data_dir, graph)))
    assert in_processes == in_threads
    sources = {d.source for distractors, *_ in in_threads for d in distractors}
    assert {"knowledge_graph", "numeric"} <= sources  # the graph was queried from the worker too
    assert in_threads[3][-1][0].id == "facts:paris"


def test_with_processes_zero_the_work_stays_in_this_process(data_dir: Path, graph: str) -> None:
    async def scenario() -> type:
        async with open_cpu_work(recipe(data_dir, graph), CpuSettings(processes=0)) as cpu:
            await draw_distractors(cpu, *CASES[2], 30, random.Random(1))
            assert multiprocessing.active_children() == []
            return type(cpu)

    assert asyncio.run(scenario()) is InThreads


def test_missing_assets_are_reported_from_the_worker_with_their_path(tmp_path: Path, graph: str) -> None:
    async def scenario() -> None:
        async with open_cpu_work(recipe(tmp_path, graph), CpuSettings(processes=1)):
            pass

    with pytest.raises(FileNotFoundError) as raised:
        asyncio.run(scenario())
    assert raised.value.filename == str(asset_paths(ScoringSettings(data_dir=tmp_path)).vectors)
    assert multiprocessing.active_children() == []  # the pool was stopped


class HangingGraph:
    """A SPARQL endpoint that holds each query until released, then answers with no rows."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.release = threading.Event()
        graph = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                graph.asked.set()
                graph.release.wait(60)
                body = b'{"head": {"vars": []}, "results": {"bindings": []}}'
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the killed worker's query
                    self.send_response(200)
                    self.send_header("Content-Type", "application/sparql-results+json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)

            do_POST = do_GET

            def log_message(self, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/query"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()


def test_a_worker_killed_mid_job_fails_that_component_and_the_next_job_is_scored(
    data_dir: Path, fake_upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    hanging = HangingGraph()
    settings = settings_for(data_dir, sparql_timeout_s=60.0, mode="binary", max_checks=2)
    cpu_recipe = recipe(data_dir, hanging.url, sparql_timeout_s=60.0, mode="binary", max_checks=2)
    question, answer = CASES[0]
    fake_upstream.responder = Answerer(answer, lambda n: "original")

    async def scenario() -> tuple[Any, Any]:
        async with open_cpu_work(cpu_recipe, CpuSettings(processes=1)) as cpu, upstream_ask(fake_upstream.url) as ask:  # type: ignore[attr-defined]
            assert isinstance(cpu, InProcesses)
            scorer = ConsistencyScorer(settings.consistency, cpu)
            pipeline = ScoringPipeline([scorer], lambda model, purpose, lane: ask, settings)
            first = asyncio.create_task(
                pipeline.run(ScoringJob(id="a", model="fake", question=question, answer=answer))
            )
            assert await asyncio.to_thread(hanging.asked.wait, 60)  # the worker is inside the job
            [worker] = multiprocessing.active_children()
            worker.kill()
            crashed = await first
            hanging.release.set()  # the new worker's queries are answered
            return crashed, await pipeline.run(ScoringJob(id="b", model="fake", question=question, answer=answer))

    try:
        with caplog.at_level(logging.WARNING, logger="trustgate.scoring"):
            crashed, scored = asyncio.run(scenario())
    finally:
        hanging.close()
    bc = crashed.components["bc"]
    assert crashed.status == "failed" and bc.value is None and bc.error.startswith("WorkerCrashed:")
    assert [f.reason for f in bc.failures] == ["worker"]  # what trustgate_scorer_errors_total counts
    assert len([r for r in caplog.records if "scorer bc failed (worker)" in r.getMessage()]) == 1  # logged once
    assert scored.status == "done" and scored.components["bc"].value == 1.0
    assert scored.components["bc"].details.distractors_available > 0


def test_shutdown_kills_a_worker_still_busy_after_the_grace_period(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A job stuck in the worker (a graph query that never ends) does not hold the gateway's shutdown."""
    hanging = HangingGraph()

    async def scenario() -> tuple[BaseException | None, multiprocessing.process.BaseProcess]:
        async with open_cpu_work(
            recipe(data_dir, hanging.url, sparql_timeout_s=600.0), CpuSettings(processes=1)
        ) as cpu:
            stuck = asyncio.create_task(draw_distractors(cpu, *CASES[0], 30, random.Random(1)))
            assert await asyncio.to_thread(hanging.asked.wait, 60)
            [worker] = multiprocessing.active_children()
        await asyncio.wait({stuck})
        return stuck.exception(), worker

    try:
        with caplog.at_level(logging.WARNING, logger="trustgate.cpu"):
            error, worker = asyncio.run(scenario())
    finally:
        hanging.close()
    assert isinstance(error, WorkerCrashed) and not worker.is_alive()
    assert any("killed" in r.getMessage() for r in caplog.records)
    assert multiprocessing.active_children() == []  # not restarted: the pool was closing


def test_a_break_read_after_the_pool_has_shut_down_still_sees_its_workers() -> None:
    """The closing gateway's shutdown can end before the stuck job learns of the break.

    The executor's shutdown drops its table of workers; what the break means is read from them all the same.
    """
    executor = ProcessPoolExecutor(
        1,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=resource.setrlimit,
        initargs=(resource.RLIMIT_CORE, (0, 0)),
    )  # killed as below, it dumps no core
    pool, job = _Pool(executor, 1), object()
    pool.in_flight.append(job)
    started = executor.submit(os.getpid).result(timeout=60)  # the worker has run its initializer
    sleeping = executor.submit(time.sleep, 60)
    os.kill(started, signal.SIGXCPU)  # as the kernel does past the job's CPU limit
    with pytest.raises(BrokenProcessPool):
        sleeping.result(timeout=60)
    executor.shutdown(wait=True)
    assert pool.broke() == _Break(frozenset({job}), cpu_time=True)


def gateway_config_file(folder: Path, data_dir: Path, endpoint: str, upstream_url: str) -> Path:
    config = gateway_config(
        upstream_url,
        trustgate={
            "server": {"host": "127.0.0.1", "port": 0},
            "scoring": {
                "data_dir": str(data_dir),
                "mode": "async",
                "cpu": {"processes": 2},
                "consistency": {"sparql_endpoint": endpoint, "seed": 1, "max_checks": 2},
                "factcheck": {"default_corpora": []},
            },
            "store": {"path": str(folder / "records.sqlite3")},
        },
    )
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def cpu_workers(gateway: GatewayProcess) -> list[int]:
    """The gateway's descendants that are pool workers (multiprocessing's resource tracker is another one; with
    the local scoring worker, the default, they are its children)."""
    return [pid for pid in gateway.descendants() if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]


@pytest.mark.parametrize("stop", ["shutdown", "sigkill"])
def test_the_gateway_takes_its_workers_with_it(
    stop: str, tmp_path: Path, data_dir: Path, graph: str, fake_upstream: FakeUpstream
) -> None:
    """SIGTERM: the lifespan stops them (and forgets them); SIGKILL: the kernel's parent-death signal kills them."""
    config = gateway_config_file(tmp_path, data_dir, graph, fake_upstream.url)  # type: ignore[attr-defined]
    with serve_config(config) as gateway:
        workers = cpu_workers(gateway)
        assert len(workers) == 2 and all(alive(pid) for pid in workers)
        registered = [registry_dir() / f"{pid}.json" for pid in workers]
        # the second guard, should the signal not fire; a worker writes it as it starts, and the gateway is ready
        # once one worker has loaded, so the other may still be on its way
        assert wait_until(lambda: all(entry.exists() for entry in registered), timeout=60)
        if stop == "sigkill":
            gateway.kill()
        else:
            gateway.process.send_signal(signal.SIGTERM)
            gateway.process.wait(60)
            assert "Application shutdown complete" in "".join(gateway.output)
    assert all(wait_gone(pid) for pid in workers), [pid for pid in workers if alive(pid)]
    if stop == "shutdown":
        assert not any(entry.exists() for entry in registered)  # stopped on purpose, not by the signal
    reap_stale_children()  # drops the killed gateway's entries


def _mapped(pid: int, library: str) -> bool:
    """Whether the process has a shared object under ``site-packages/<library>/`` mapped (loaded)."""
    try:
        return f"/site-packages/{library}/" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed: nothing to keep out")
def test_no_scoring_process_of_the_gateway_loads_torch(
    tmp_path: Path, data_dir: Path, graph: str, fake_upstream: FakeUpstream
) -> None:
    """spaCy's backend would load torch, installed for the opt-in NLI judge, in each process that parses answers:
    seconds of start and hundreds of MiB that no default scorer uses (``scoring.consistency.thinc_backend``)."""
    config = gateway_config_file(tmp_path, data_dir, graph, fake_upstream.url)  # type: ignore[attr-defined]
    with serve_config(config) as gateway:
        workers = cpu_workers(gateway)
        assert len(workers) == 2
        assert wait_until(lambda: all(_mapped(pid, "spacy") for pid in workers), timeout=60)  # both have loaded
        processes = [gateway.process.pid, *gateway.descendants()]
        assert [pid for pid in processes if _mapped(pid, "torch")] == []


def test_a_job_past_its_cpu_time_fails_alone_and_the_worker_is_replaced(data_dir: Path, graph: str) -> None:
    """The limit kills the worker in the middle of spaCy's compiled parser; the job queued behind it runs on the
    fresh worker, and draws what it would have drawn alone."""
    question, answer = CASES[2]

    async def scenario() -> tuple[BaseException | None, Any, Any, list[int]]:
        settings = CpuSettings(processes=1, max_job_cpu_s=1.0)
        async with open_cpu_work(recipe(data_dir, graph), settings) as cpu:
            [first] = multiprocessing.active_children()
            hostile = asyncio.create_task(draw_distractors(cpu, question, long_answer(300_000), 30, random.Random(1)))
            waiting = asyncio.create_task(draw_distractors(cpu, question, answer, 30, random.Random(2)))
            await asyncio.wait({hostile, waiting})
            [second] = multiprocessing.active_children()
            alone = await draw_distractors(cpu, question, answer, 30, random.Random(2))
            return hostile.exception(), waiting.result(), alone, [first.pid or 0, second.pid or 0]

    error, waited, alone, workers = asyncio.run(scenario())
    assert isinstance(error, CpuTimeExceeded) and Failure.of(error).reason == "cpu_time"
    assert waited.distractors and waited.distractors == alone.distractors
    assert workers[0] != workers[1]
