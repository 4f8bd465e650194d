"""Scoring's CPU work off the event loop: in worker processes, or (``cpu.processes: 0``) in threads.

Generating distractors (spaCy parsing, knowledge-graph queries and their
JSON, word-vector neighbours) and retrieving evidence (BM25) cost
milliseconds of CPU per job, most of it holding the GIL. In threads of the
gateway they take that time from the event loop that serves users; in worker
processes they do not, and at a higher niceness the kernel gives a contended
core to the users' requests first.

The pool knows no scorer. Each scorer that has CPU work registers a part
with it: a ``Part`` (a name, typed by what it loads) and a picklable loader
in the ``CpuRecipe`` (Trust_BC's distractor generator in
``consistency.cpu_part``, Trust_FC's evidence index in
``factcheck.cpu_part``). The scorers then see one seam, ``CpuWork``:
``await cpu.run(part, work)`` calls ``work(part)`` wherever the part was
loaded, the same whichever runs behind it:

- ``InThreads(parts)``: ``CpuParts`` loaded in this process, called in threads;
- ``InProcesses``: a ``ProcessPoolExecutor`` whose workers each load their own
  ``CpuParts`` once, from the recipe. Workers are spawned (a fresh
  interpreter: forking a process with threads is unsafe), niced, ignore the
  terminal's and the service manager's signals, and die with the process
  that started them (``scoring.children``); its shutdown stops them.

Only data crosses between processes: the work (a module-level function,
bound to its arguments with ``functools.partial``) and what it returns.
A worker that dies fails the jobs it held with ``WorkerCrashed``
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
import resource
import signal
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from typing import Any, Generic, TypeVar

from .children import die_with, forget_child, register_child
from .settings import CpuSettings
from .types import ScoringFailure

__all__ = [
    "CpuParts",
    "CpuRecipe",
    "CpuTimeExceeded",
    "CpuWork",
    "InProcesses",
    "InThreads",
    "Part",
    "PartLoader",
    "WorkerCrashed",
    "open_cpu_work",
]

log = logging.getLogger("trustgate.cpu")

T = TypeVar("T")
P = TypeVar("P")
# Loads one part in a process: picklable (a module-level function, bound with functools.partial), so a worker
# process can load its own. It may raise (missing assets) or give None (nothing to load: the part is absent).
PartLoader = Callable[[], object]
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
class Part(Generic[P]):
    """The name a scorer registers its part under, typed by what the part's loader gives."""

    name: str


@dataclass(frozen=True)
class CpuRecipe:
    """What a process loads: each registered part's loader, by the part's name. Picklable."""

    loaders: Mapping[str, PartLoader] = field(default_factory=dict)


class CpuParts:
    """The heavy read-only parts of one process, by name; a part whose loader gave None is absent."""

    def __init__(self, **parts: object) -> None:
        self._parts = {name: part for name, part in parts.items() if part is not None}

    @classmethod
    def load(cls, recipe: CpuRecipe) -> CpuParts:
        """Each part the recipe registers, loaded once; what a loader raises (missing assets) goes up."""
        return cls(**{name: load() for name, load in recipe.loaders.items()})

    def loaded(self) -> frozenset[str]:
        return frozenset(self._parts)

    def get(self, name: str) -> object:
        if name not in self._parts:
            raise RuntimeError(f"no {name!r} part was loaded in this process (CpuRecipe.loaders)")
        return self._parts[name]


def _on_part(name: str, work: Callable[[Any], T], parts: CpuParts) -> T:
    return work(parts.get(name))


Task = Callable[[CpuParts], T]  # a picklable call on the parts


class CpuWork(ABC):
    """Where the scorers' CPU work runs; they await it and never learn whether a thread or a process did it."""

    loaded: frozenset[str]  # the names of the parts that loaded

    def has(self, part: Part[Any]) -> bool:
        return part.name in self.loaded

    async def run(self, part: Part[P], work: Callable[[P], T]) -> T:
        """``work(part)`` where the part is loaded; ``work`` is picklable (a module-level function, bound with
        ``functools.partial``), and so is what it returns."""
        return await self._run(functools.partial(_on_part, part.name, work))

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
            return CpuTimeExceeded(
                "the job used more CPU time than cpu.max_job_cpu_s in a scoring CPU worker, "
                "which was killed; a new one was started"
            )
        return WorkerCrashed("a scoring CPU worker process died during the job; a new one was started")


@dataclass(eq=False)
class _Pool:
    """One executor and the jobs handed to it, oldest first: when it breaks, the oldest were the running ones."""

    executor: ProcessPoolExecutor
    size: int
    in_flight: list[object] = field(default_factory=list)
    _broken: _Break | None = None
    # The executor's own table of its workers, held here because its shutdown sets its attribute to None, and a job
    # may learn of the break only after a closing gateway's shutdown has run; the table itself is kept as it was.
    _processes: Mapping[int, BaseProcess] = field(init=False)

    def __post_init__(self) -> None:
        self._processes = self.executor._processes  # no public accessor; typeshed declares it

    def workers(self) -> list[BaseProcess]:
        """Its worker processes, alive or not."""
        return list(self._processes.values())

    def broke(self) -> _Break:
        """What its break means; the first job to ask fixes it, before any leaves and before the pool shuts down."""
        if self._broken is None:
            self._broken = _Break(frozenset(self.in_flight[: self.size]), self._killed_for_cpu_time())
        return self._broken

    def _killed_for_cpu_time(self) -> bool:
        workers = self.workers()
        # The executor can hear of the death (its result pipe closed) a moment before the dead worker's sentinel
        # is ready on a busy machine; the break was a death, so wait a bounded moment for it rather than read none.
        gone = multiprocessing.connection.wait([w.sentinel for w in workers], timeout=1.0)
        for worker in workers:
            if worker.sentinel in gone:
                worker.join(1.0)  # exited: reaped at once, so its exit code can be read
        return -signal.SIGXCPU in (worker.exitcode for worker in workers)

    def discard(self) -> None:
        """Stop a broken pool: its other workers ignore SIGTERM (the executor's way), so they are killed."""
        workers = self.workers()
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
        self.loaded: frozenset[str] = frozenset()

    def _start(self) -> _Pool:
        """A new pool, its workers started at once (from this thread, the one their death signal watches)."""
        executor = ProcessPoolExecutor(
            self._settings.processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker,
            initargs=(self._recipe, self._settings.nice, os.getpid()),
        )
        for _ in range(self._settings.processes):  # the pool starts a worker per call until it has them all
            executor.submit(_in_worker, CpuParts.loaded, self._settings.max_job_cpu_s)
        return _Pool(executor, self._settings.processes)

    async def ready(self) -> frozenset[str]:
        """Wait until a worker has loaded its parts; raises what loading raised (missing assets)."""
        self.loaded = await self._run(CpuParts.loaded)
        return self.loaded

    async def _run(self, task: Task[T], *, again: bool = False) -> T:
        pool, job = self._pool, object()
        pool.in_flight.append(job)
        try:
            return await asyncio.get_running_loop().run_in_executor(
                pool.executor, _in_worker, task, self._settings.max_job_cpu_s
            )
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
        executor, workers = self._pool.executor, self._pool.workers()
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
