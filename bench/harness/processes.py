"""Servers as child processes of a benchmark: started in their own session, waited for, and always stopped.

Each server runs in a process group of its own, so that stopping it stops any worker it forked and its CPU
counts the whole group.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from .cpu import group_cpu_seconds

__all__ = ["REPO", "BenchError", "ServerProcess", "free_port", "raise_on_sigterm", "running"]

REPO = Path(__file__).resolve().parents[2]


class BenchError(RuntimeError):
    """A target could not be set up or did not answer correctly; the run stops."""


def free_port() -> int:
    """A currently free loopback port (the OS picks it; the tiny reuse race is acceptable here)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


def raise_on_sigterm(signum: int, frame: object) -> None:
    """A SIGTERM handler that raises, so that the ``finally`` blocks of ``running`` stop every server."""
    raise SystemExit(128 + signum)
