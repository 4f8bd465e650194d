"""A running gateway's refits: counted here, made in a process of their own.

The gateway counts, per fit, the records its teachers label for the first
time (``Teachers.counts_toward_refit``: a relabel replaces a label and never
counts). Every ``feedback.refit_every`` of them the fit is queued, and one
refit process at a time (``python -m proxy.calibrate --refit``: the refit
``trustgate calibrate`` makes) takes every fit queued. It reads the labels from
the record store and writes each report to the fit store beside them, where
the scoring of every process sharing that store picks it up; then it ends.

So a refit never shows in the latency of the process that serves users: the
thousands of records it reads and the fit it makes are another process's CPU,
niced (``scoring.cpu.nice``), held to ``feedback.max_refit_cpu_s`` of CPU
time (the kernel stops it past that) and ``feedback.refit_timeout_s`` of
time, and dying with the gateway. A fit is refitted at most once per
``feedback.min_refit_interval_s``: a storm of labels waits for the next
refit, which reads them all, so it costs one refit per interval. The serving process writes the order (the
settings, secrets included, go on the child's stdin, never a command line or
a file) and reads one line per fit back. A refit that fails, or a process
that dies or overruns, keeps the fit in use, logged and counted
(``trustgate_refit_failures_total``); a fit the refit guard held is counted
(``trustgate_calibration_fits_held_total``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import math
import pickle
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from scoring import FitKey, Labelled, RefitOutcome, Teachers
from scoring.children import die_with_parent, forget_child, register_child

from ..base.log_format import LogFormat
from ..config.settings import GatewaySettings

__all__ = ["REFIT_MODULE", "RefitLine", "RefitOrder", "Refits"]

log = logging.getLogger("trustgate.learning")

REFIT_MODULE = "proxy.calibrate"
_MAX_LINE = 4 * 1024 * 1024  # a report holds a few chart points per score: far below this


@dataclass(frozen=True)
class RefitOrder:
    """What a refit process is handed on its stdin: the settings (secrets included), how to log, which fits."""

    settings: GatewaySettings
    log_format: LogFormat
    fits: tuple[FitKey, ...]


class RefitLine(BaseModel):
    """One fit's result, one JSON line of the refit process's stdout: what the fit store now holds, or why not."""

    model_config = ConfigDict(extra="forbid")

    model: str
    key: str | None = None
    outcome: RefitOutcome | None = None
    error: str | None = None


class Refits:
    """Counts labels per fit and runs the queued refits in a child process, one process at a time."""

    def __init__(
        self,
        settings: GatewaySettings,
        teachers: Teachers,
        log_format: LogFormat,
        *,
        on_outcome: Callable[[RefitOutcome], None] = lambda outcome: None,
        on_failure: Callable[[], None] = lambda: None,
    ) -> None:
        self._settings = settings
        self._feedback = settings.trustgate.scoring.feedback
        self._teachers = teachers
        self._log_format = log_format
        self._on_outcome = on_outcome
        self._on_failure = on_failure
        self._new_labels: collections.Counter[FitKey] = collections.Counter()
        self._queued: dict[FitKey, None] = {}  # an ordered set of the fits waiting for a refit
        self._last: dict[FitKey, float] = {}  # when each fit's last refit started (monotonic)
        self._task: asyncio.Task[None] | None = None

    def note_label(self, labelled: Labelled) -> None:
        """A label was stored; queue a refit of the fit it teaches once that fit has ``refit_every`` new records."""
        fit = self._teachers.counts_toward_refit(labelled.record, labelled.previous)
        if fit is None:
            return
        self._new_labels[fit] += 1
        if self._new_labels[fit] >= self._feedback.refit_every:
            self._new_labels[fit] = 0
            self._queued[fit] = None
            if self._task is None or self._task.done():
                self._task = asyncio.create_task(self._drain(), name="trustgate-refits")

    def _due(self) -> tuple[tuple[FitKey, ...], float]:
        """The queued fits whose interval since their last refit has passed, and how long until the next is."""
        now, interval = time.monotonic(), self._feedback.min_refit_interval_s
        waits = {fit: self._last.get(fit, -math.inf) + interval - now for fit in self._queued}
        return tuple(fit for fit, wait in waits.items() if wait <= 0), min(waits.values(), default=0.0)

    async def _drain(self) -> None:
        while self._queued:
            fits, wait = self._due()
            if not fits:
                await asyncio.sleep(wait)
                continue
            for fit in fits:
                del self._queued[fit]
                self._last[fit] = time.monotonic()
            try:
                lines = await self._run(fits)
            except Exception as exc:  # the process could not run: every fit it was to make keeps the one in use
                log.error("refit of %s failed (%s); the fits in use stay", ", ".join(map(str, fits)), exc)
                for _ in fits:
                    self._on_failure()
                continue
            for line in lines:
                if line.outcome is not None:
                    self._on_outcome(line.outcome)
                else:
                    log.error("refit of %s failed: %s; its fit in use stays", FitKey(line.model, line.key), line.error)
                    self._on_failure()
            for _ in range(len(fits) - len(lines)):  # the process ended before it answered for these
                self._on_failure()

    async def _run(self, fits: tuple[FitKey, ...]) -> list[RefitLine]:
        """Refit ``fits`` in a child process; the lines it wrote, however it ended (logged when not well)."""
        argv = [sys.executable, "-m", REFIT_MODULE, "--refit"]
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            preexec_fn=die_with_parent(),
            limit=_MAX_LINE,
        )
        register_child(process.pid, argv)
        try:
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(pickle.dumps(RefitOrder(self._settings, self._log_format, fits)))
            with contextlib.suppress(ConnectionError):
                await process.stdin.drain()
            process.stdin.close()
            lines = await asyncio.wait_for(_read_lines(process.stdout), self._feedback.refit_timeout_s)
            await process.wait()
        except TimeoutError:
            log.error(
                "a refit process ran past %.0f s (feedback.refit_timeout_s); stopped", self._feedback.refit_timeout_s
            )
            lines = []
        finally:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
            forget_child(process.pid)
        if process.returncode:
            log.error("a refit process ended with status %s; see its log above", process.returncode)
        return lines

    async def idle(self) -> None:
        """Wait for the queued refits (tests, shutdown)."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def stop(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


async def _read_lines(stdout: asyncio.StreamReader) -> list[RefitLine]:
    lines = []
    while line := await stdout.readline():
        try:
            lines.append(RefitLine.model_validate_json(line))
        except ValueError:
            log.error("a refit process wrote a line the gateway cannot read; ignored")
    return lines
