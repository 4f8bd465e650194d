"""Child processes (Oxigraph, llama.cpp, scoring's CPU workers) that never outlive the process that started them.

Two guards, because a gateway can die without running any clean-up (SIGKILL,
the OOM killer):

- on Linux each child asks the kernel for a parent-death signal
  (``prctl(PR_SET_PDEATHSIG, SIGKILL)``) between fork and exec, so it is killed
  the moment its parent dies;
- every child is written to a small registry (one JSON file per child, under the
  user's temp directory) naming its parent; a starting process kills the
  registered children whose parent is gone and which are still running, in
  case the signal was not available or did not fire.

A process-pool worker (``scoring.cpu_pool``) arms the same signal itself as it
starts (``die_with``) and registers itself, naming the gateway as its parent.

A process is identified by its pid *and* its start time, so a recycled pid is
never mistaken for a registered one. The parent-death signal follows the
*thread* that forked the child: spawn from the event-loop thread that lives as
long as the process, never from a short-lived worker thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import orjson

__all__ = ["die_with", "die_with_parent", "forget_child", "reap_stale_children", "register_child", "registry_dir"]

log = logging.getLogger("trustgate.children")

_PR_SET_PDEATHSIG = 1


def registry_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"trustgate-{os.getuid()}" / "children"


def _prctl() -> Callable[..., int] | None:
    """libc's prctl, looked up in the parent: nothing is loaded between fork and exec."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child receive SIGKILL when this process dies (None off Linux)."""
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()

    def preexec() -> None:
        _arm(prctl, parent)

    return preexec


def die_with(parent: int) -> None:
    """Make this running process receive SIGKILL when ``parent`` dies (a pool worker, armed as it starts).

    A process-pool worker runs Python from the start, so it arms the signal
    itself rather than through a ``preexec_fn``; off Linux this does nothing.
    """
    prctl = _prctl()
    if prctl is not None:
        _arm(prctl, parent)


def _arm(prctl: Callable[..., int], parent: int) -> None:
    prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)


def _start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (``/proc/PID/stat`` field 22); None when gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    state, start = fields[0], fields[19]
    return None if state == "Z" else int(start)


def register_child(pid: int, argv: Sequence[str], *, parent: int | None = None) -> None:
    """Note a started child and its parent (this process, unless a child registers itself) in the registry."""
    folder = registry_dir()
    folder.mkdir(parents=True, exist_ok=True)
    parent = os.getpid() if parent is None else parent
    entry = {"pid": pid, "start": _start_time(pid), "parent": parent, "parent_start": _start_time(parent),
             "argv": list(argv)}
    (folder / f"{pid}.json").write_bytes(orjson.dumps(entry))


def forget_child(pid: int) -> None:
    """Remove a child stopped on purpose from the registry."""
    with contextlib.suppress(FileNotFoundError):
        (registry_dir() / f"{pid}.json").unlink()


def reap_stale_children(wait_s: float = 5.0) -> list[int]:
    """Kill registered children whose parent has died; returns their pids."""
    killed: list[int] = []
    for file in sorted(registry_dir().glob("*.json")):
        try:
            entry = orjson.loads(file.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue
        parent, child = int(entry["parent"]), int(entry["pid"])
        if entry["parent_start"] is not None and _start_time(parent) == entry["parent_start"]:
            continue  # its parent still runs: not stale
        if entry["start"] is not None and _start_time(child) == entry["start"]:
            log.warning("killing stale child process %d left by dead process %d: %s", child, parent,
                        " ".join(entry["argv"][:3]))
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
            killed.append(child)
        with contextlib.suppress(FileNotFoundError):
            file.unlink()
    deadline = time.monotonic() + wait_s
    while any(_start_time(pid) is not None for pid in killed) and time.monotonic() < deadline:
        time.sleep(0.05)
    return killed
