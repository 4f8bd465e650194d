"""The suite's four tiers, and the guard that keeps a unit test honest.

Every test is in exactly one tier, given by its marker (pyproject.toml registers them):

- ``unit``: in-process: no listening server, no socket to one, no subprocess, no real model. Fast enough to
  run on every change (``make test-unit``).
- ``integration``: real parts over real sockets or processes: uvicorn servers (the session's fake upstream
  included), Redis, Prometheus and its tools, Alertmanager, kubectl, Oxigraph, child processes.
- ``e2e``: the gateway as a user runs it: the real local model (llama.cpp serving SmolLM2), or the
  ``trustgate`` command end to end.
- ``browser``: the console in headless Chromium.

While a unit test runs (its fixtures' set-up included), ``UnitGuard`` refuses what only the other tiers may
do: connecting or binding an INET socket, and starting a process. A test that does either is mis-tiered, and
fails saying so. Unix socket pairs (asyncio's self-pipe) are in-process and allowed.
"""

from __future__ import annotations

import _posixsubprocess
import socket
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

TIERS = ("unit", "integration", "e2e", "browser")

_INET = (socket.AF_INET, socket.AF_INET6)
_SOCKET_EVENTS = {"socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"}
_PROCESS_EVENTS = {
    "subprocess.Popen",
    "os.fork",
    "os.forkpty",
    "os.posix_spawn",
    "os.spawn",
    "os.exec",
    "os.system",
    "pty.spawn",
}


def tier_problem(marker_names: Iterable[str]) -> str | None:
    """Why a test with these markers is not in exactly one tier, or None when it is."""
    found = sorted(set(marker_names) & set(TIERS))
    if len(found) == 1:
        return None
    if not found:
        return f"no tier marker (one of {', '.join(TIERS)})"
    return f"several tier markers ({', '.join(found)})"


class MisTiered(Exception):
    """A unit test did what only an integration, e2e or browser test may do.

    Not an OSError, so that code which retries a refused connection does not swallow it.
    """


class UnitGuard:
    """Refuses INET sockets and new processes to the armed test's own threads (its thread, and those started
    while it runs); threads that were already running, such as another test's session-wide server, are left
    alone. Installed once per process: an audit hook cannot be removed, so it is armed and disarmed instead.

    ``multiprocessing``'s spawn start raises no audit event: its one way to start a child,
    ``_posixsubprocess.fork_exec`` (which ``subprocess`` uses too), is wrapped as well.
    """

    def __init__(self, raising: bool = True) -> None:
        self.raising = raising
        self._outside: set[threading.Thread] | None = None
        self.refused: list[str] = []
        sys.addaudithook(self._audit)
        _posixsubprocess.fork_exec = self._guarded(_posixsubprocess.fork_exec)

    def arm(self) -> None:
        """Watch the calling thread (the test's) and every thread started from now on."""
        self.refused = []
        self._outside = set(threading.enumerate()) - {threading.current_thread()}

    def disarm(self) -> list[str]:
        """What the test was refused (or, not raising, did) while armed."""
        self._outside = None
        refused, self.refused = self.refused, []
        return refused

    def _watched(self) -> bool:
        outside = self._outside
        return outside is not None and threading.current_thread() not in outside

    def _refuse(self, what: str) -> None:
        self.refused.append(what)
        if self.raising:
            raise MisTiered(f"a unit test {what}: mark it integration (tests/tiers.py)")

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        if self._outside is None:  # the common case, first: the hook sees every event of the process
            return
        if event in _SOCKET_EVENTS:
            sock = args[0]
            if getattr(sock, "family", None) in _INET and self._watched():
                self._refuse(f"used an INET socket ({event} {args[1]!r})")
        elif event in _PROCESS_EVENTS and self._watched():
            self._refuse(f"started a process ({event})")

    def _guarded(self, fork_exec: Callable[..., int]) -> Callable[..., int]:
        def fork_exec_unless_refused(*args: Any) -> int:
            if self._watched():
                self._refuse("started a process (fork_exec)")
            return fork_exec(*args)

        return fork_exec_unless_refused
