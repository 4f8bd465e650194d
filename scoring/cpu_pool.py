"""Scoring's CPU work off the event loop: in worker processes, or (``cpu.processes: 0``) in threads.

Generating distractors (spaCy parsing, knowledge-graph queries and their
JSON, word-vector neighbours) and retrieving evidence (BM25) cost
milliseconds of CPU per job, most of it holding the GIL. In threads of the
gateway they take that time from the event loop that serves users; in worker
processes they do not, and at a higher niceness the kernel gives a contended
core to the users' requests first.

The scorers see one seam, ``CpuWork``: ``await cpu.distractors(question,
answer, num, rng)`` and ``await cpu.evidence(query, k)``, the same whichever
runs behind it:

- ``InThreads(parts)``: ``CpuParts`` loaded in this process, called in threads;
- ``InProcesses``: a ``ProcessPoolExecutor`` whose workers each load their own
  ``CpuParts`` once, from a picklable ``CpuRecipe`` (the settings and the
  graph's URL). Workers are spawned (a fresh interpreter: forking a process
  with threads is unsafe), niced, ignore the terminal's and the service
  manager's signals, and die with the process that started them
  (``scoring.children``); its shutdown stops them.

Only data crosses between processes: the question and answer, the random
generator's state (it comes back advanced, so the checks drawn after
generation are the same either way), a ``Distractions`` or a list of
``Evidence``. A worker that dies fails the jobs it held with ``WorkerCrashed``
(reason ``worker``: counted and logged like any scorer failure, never a hung
job) and a fresh pool takes the next ones.

Each job may use ``max_job_cpu_s`` of CPU time in a worker: the worker sets
its own soft ``RLIMIT_CPU`` that far above what it has used before each job,
so the kernel kills it (SIGXCPU, no core dump) past the limit, wherever the
time goes (spaCy's compiled code included, which no Python timer interrupts).
That job fails with ``CpuTimeExceeded`` (reason ``cpu_time``); jobs that were
only waiting behind it in the broken pool are run again on the fresh one, so
one hostile job costs the others at most its limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import multiprocessing
import multiprocessing.connection
import os
import random
import resource
import signal
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from .children import die_with, forget_child, register_child
from .settings import CpuSettings, ScoringSettings
from .types import ScoringFailure

if TYPE_CHECKING:  # the heavy libraries load only where the parts are loaded (CpuParts.load)
    from .consistency.distractors import DistractorGenerator, DistractorPool
    from .factcheck.evidence import Evidence
    from .factcheck.index import EvidenceIndex

__all__ = ["CpuParts", "CpuRecipe", "CpuTimeExceeded", "CpuWork", "Distractions", "InProcesses", "InThreads",
           "PartsLoaded", "WorkerCrashed", "open_cpu_work"]

log = logging.getLogger("trustgate.cpu")

T = TypeVar("T")
RngState = tuple[Any, ...]  # random.Random.getstate()
# How long a shutting-down gateway lets its workers finish the jobs they hold before killing them.
SHUTDOWN_GRACE_S = 5.0
WORKER_ARGV = ["trustgate", "scoring CPU worker"]  # how the children registry names a worker


class WorkerCrashed(ScoringFailure):
    """A scoring CPU worker process died while it held the job (killed, out of memory, crashed)."""

    reason = "worker"


class CpuTimeExceeded(ScoringFailure):
    """The job used more than ``cpu.max_job_cpu_s`` of CPU time: its worker was killed and replaced."""

    reason = "cpu_time"


@dataclass(frozen=True)
class CpuRecipe:
    """What a process needs to load its ``CpuParts``: picklable, so a worker process can load its own."""

    settings: ScoringSettings
    sparql_endpoint: str | None = None  # the knowledge graph's query URL (the embedded server's, usually)
    distractors: bool = False  # load the distractor generator (Trust_BC)
    evidence: bool = False  # load the evidence index (Trust_FC)


@dataclass(frozen=True)
class PartsLoaded:
    """Which parts loaded: the evidence index is absent when none was built (Trust_FC is then off)."""

    distractors: bool
    evidence: bool


@dataclass(frozen=True)
class Distractions:
    """A distractor pool and the random state after drawing it: picklable, it comes back from a worker."""

    pool: DistractorPool
    rng_state: RngState


class CpuParts:
    """The heavy read-only collaborators of one process, and the CPU work done with them."""

    def __init__(self, generator: DistractorGenerator | None = None, index: EvidenceIndex | None = None) -> None:
        self._generator = generator
        self._index = index

    @classmethod
    def load(cls, recipe: CpuRecipe) -> CpuParts:
        """Load what the recipe asks for; missing Trust_BC assets raise ``FileNotFoundError``."""
        generator = index = None
        if recipe.distractors:
            from .consistency.runtime import load_generator

            generator = load_generator(recipe.settings, recipe.sparql_endpoint)
        if recipe.evidence:
            from .factcheck.assets import load_evidence_index

            index = load_evidence_index(recipe.settings)
        return cls(generator, index)

    def loaded(self) -> PartsLoaded:
        return PartsLoaded(distractors=self._generator is not None, evidence=self._index is not None)

    def distractors(self, question: str, answer: str, num: int, rng_state: RngState) -> Distractions:
        if self._generator is None:
            raise RuntimeError("no distractor generator was loaded (CpuRecipe.distractors)")
        rng = random.Random()
        rng.setstate(rng_state)
        pool = self._generator.generate(question, answer, num, rng)
        return Distractions(pool, rng.getstate())

    def evidence(self, query: str, k: int) -> list[Evidence]:
        if self._index is None:
            raise RuntimeError("no evidence index was loaded (CpuRecipe.evidence)")
        from .factcheck.text import tokenize

        return self._index.search(tokenize(query), k)


Task = Callable[[CpuParts], T]  # a picklable call on the parts: a CpuParts method, bound to its arguments


class CpuWork(ABC):
    """Where the scorers' CPU work runs; they await it and never learn whether a thread or a process did it."""

    loaded: PartsLoaded

    async def distractors(self, question: str, answer: str, num: int, rng: random.Random) -> DistractorPool:
        """The answer's distractor pool; ``rng`` advances exactly as if the generator had drawn from it here."""
        drawn = await self._run(functools.partial(CpuParts.distractors, question=question, answer=answer, num=num,
                                                  rng_state=rng.getstate()))
        rng.setstate(drawn.rng_state)
        return drawn.pool

    async def evidence(self, query: str, k: int) -> list[Evidence]:
        """The ``k`` best passages for ``query`` (tokenized where the index is)."""
        return await self._run(functools.partial(CpuParts.evidence, query=query, k=k))

    @abstractmethod
    async def _run(self, task: Task[T]) -> T: ...


class InThreads(CpuWork):
    """The parts loaded in this process, called in threads (``cpu.processes: 0``): they share its GIL."""

    def __init__(self, parts: CpuParts) -> None:
        self._parts = parts
        self.loaded = parts.loaded()

    async def _run(self, task: Task[T]) -> T:
        return await asyncio.to_thread(task, self._parts)


class _WorkerState:
    """A worker process's parts, set once by ``_start_worker``: a pool's task reaches nothing else.

    Empty in the process that owns the pool.
    """

    parts: CpuParts | None = None
    error: Exception | None = None


_worker = _WorkerState()


def _start_worker(recipe: CpuRecipe, nice: int, parent: int) -> None:
    """A worker's initializer: live and die with ``parent``, yield the CPU to it, load the parts once.

    A failure to load is kept and raised by every task, so the owner learns why
    from its first call rather than from a broken pool.
    """
    die_with(parent)
    register_child(os.getpid(), WORKER_ARGV, parent=parent)
    # Ctrl-C and a service manager's SIGTERM reach the whole process group: the owner's shutdown stops workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # killed for its CPU time, a worker of GBs dumps no core
    os.nice(nice)
    try:
        _worker.parts = CpuParts.load(recipe)
    except Exception as exc:
        _worker.error = exc
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, user_api="blas")  # as in the gateway: the small vector maths gains nothing from more


def _limit_cpu(seconds: float) -> None:
    """Let the kernel kill this process once it has used ``seconds`` more CPU time (soft RLIMIT_CPU, SIGXCPU)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = math.ceil(usage.ru_utime + usage.ru_stime + seconds)
    resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))


def _in_worker(task: Task[T], cpu_limit_s: float) -> T:
    if _worker.error is not None:
        raise _worker.error
    assert _worker.parts is not None, "called outside a worker started by _start_worker"
    _limit_cpu(cpu_limit_s)
    return task(_worker.parts)


@dataclass(frozen=True)
class _Break:
    running: frozenset[object]  # the jobs the pool's workers held
    cpu_time: bool  # a worker was killed for its CPU time (SIGXCPU), not by any other death

    def failure(self) -> ScoringFailure:
        """What a job that was running fails with."""
        if self.cpu_time:
            return CpuTimeExceeded("the job used more CPU time than cpu.max_job_cpu_s in a scoring CPU worker, "
                                   "which was killed; a new one was started")
        return WorkerCrashed("a scoring CPU worker process died during the job; a new one was started")


@dataclass(eq=False)
class _Pool:
    """One executor and the jobs handed to it, oldest first: when it breaks, the oldest were the running ones."""

    executor: ProcessPoolExecutor
    size: int
    in_flight: list[object] = field(default_factory=list)
    _broken: _Break | None = None

    def broke(self) -> _Break:
        """What its break means; the first job to ask fixes it, before any leaves and before the pool shuts down."""
        if self._broken is None:
            self._broken = _Break(frozenset(self.in_flight[:self.size]), self._killed_for_cpu_time())
        return self._broken

    def _killed_for_cpu_time(self) -> bool:
        workers = list(self.executor._processes.values())  # no public accessor; typeshed declares it
        gone = multiprocessing.connection.wait([w.sentinel for w in workers], timeout=0)
        for worker in workers:
            if worker.sentinel in gone:
                worker.join(1.0)  # exited: reaped at once, so its exit code can be read
        return -signal.SIGXCPU in (worker.exitcode for worker in workers)

    def discard(self) -> None:
        """Stop a broken pool: its other workers ignore SIGTERM (the executor's way), so they are killed."""
        workers = list(self.executor._processes.values())
        self.executor.shutdown(wait=False)
        for worker in workers:
            if worker.is_alive():
                worker.kill()
            if worker.pid is not None:
                forget_child(worker.pid)


class InProcesses(CpuWork):
    """``settings.processes`` worker processes, each with its own parts; started afresh when one dies."""

    def __init__(self, recipe: CpuRecipe, settings: CpuSettings) -> None:
        self._recipe = recipe
        self._settings = settings
        self._closed = False
        self._pool = self._start()
        self.loaded = PartsLoaded(distractors=False, evidence=False)

    def _start(self) -> _Pool:
        """A new pool, its workers started at once (from this thread, the one their death signal watches)."""
        executor = ProcessPoolExecutor(self._settings.processes, mp_context=multiprocessing.get_context("spawn"),
                                       initializer=_start_worker,
                                       initargs=(self._recipe, self._settings.nice, os.getpid()))
        for _ in range(self._settings.processes):  # the pool starts a worker per call until it has them all
            executor.submit(_in_worker, CpuParts.loaded, self._settings.max_job_cpu_s)
        return _Pool(executor, self._settings.processes)

    async def ready(self) -> PartsLoaded:
        """Wait until a worker has loaded its parts; raises what loading raised (missing assets)."""
        self.loaded = await self._run(CpuParts.loaded)
        return self.loaded

    async def _run(self, task: Task[T], *, again: bool = False) -> T:
        pool, job = self._pool, object()
        pool.in_flight.append(job)
        try:
            return await asyncio.get_running_loop().run_in_executor(pool.executor, _in_worker, task,
                                                                    self._settings.max_job_cpu_s)
        except BrokenProcessPool:
            broken = pool.broke()
            if pool is self._pool and not self._closed:  # the first job to see it restarts the pool
                self._pool = self._start()
                pool.discard()
            if job not in broken.running and not again and not self._closed:  # it only waited behind them
                return await self._run(task, again=True)
            # from None: the record's error names this, not the executor's own wording
            raise broken.failure() from None
        finally:
            pool.in_flight.remove(job)

    async def aclose(self) -> None:
        """Let the workers finish what they hold (up to ``SHUTDOWN_GRACE_S``), then kill what is left."""
        self._closed = True
        executor = self._pool.executor
        workers = list(executor._processes.values())  # no public accessor; typeshed declares it
        closing = asyncio.ensure_future(asyncio.to_thread(executor.shutdown, wait=True, cancel_futures=True))
        done, _ = await asyncio.wait({closing}, timeout=SHUTDOWN_GRACE_S)
        if not done:
            log.warning("scoring CPU workers still busy %.0f s into shutdown: killed", SHUTDOWN_GRACE_S)
            for worker in workers:
                worker.kill()
            await closing
        for worker in workers:
            if worker.pid is not None:
                forget_child(worker.pid)


@contextlib.asynccontextmanager
async def open_cpu_work(recipe: CpuRecipe, settings: CpuSettings) -> AsyncIterator[CpuWork]:
    """The configured ``CpuWork`` with its parts loaded, for the owner's lifetime (workers stopped at exit)."""
    if settings.processes == 0:
        yield InThreads(await asyncio.to_thread(CpuParts.load, recipe))
        return
    work = InProcesses(recipe, settings)
    try:
        await work.ready()
        yield work
    finally:
        await work.aclose()
