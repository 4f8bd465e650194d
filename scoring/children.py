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

The registry can kill, so it trusts only what no one else can have written:
its directories (``$TMPDIR/trustgate-$UID/children``) are created 0700 and
used only while they are ours, real directories (not links) and writable by
no one else; otherwise the registry is off (logged once) and only the signal
guards. An entry is killed only while its pid still runs the command line
recorded when it was registered (read from ``/proc``, not taken from the
caller) and belongs to this user.

A process-pool worker (``scoring.cpu_pool``) arms the same signal itself as it
starts (``die_with``) and registers itself, naming the gateway as its parent.

Reaps run one at a time across processes (an exclusive ``flock`` on the
registry's ``REAP_LOCK``): two starts at once (a gateway and its scoring worker,
two gateways) would otherwise race, and the one that found the stale entry
already taken would go on to bind a port the killed child still held.

A process is identified by its pid *and* its start time, so a recycled pid is
never mistaken for a registered one. The parent-death signal follows the
*thread* that forked the child: spawn from the event-loop thread that lives as
long as the process, never from a short-lived worker thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
import logging
import os
import signal
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import orjson

__all__ = [
    "REAP_LOCK",
    "die_with",
    "die_with_parent",
    "forget_child",
    "reap_stale_children",
    "register_child",
    "registry_dir",
]

REAP_LOCK = ".reaping"  # in the registry directory: held by the process reaping

log = logging.getLogger("trustgate.children")

_PR_SET_PDEATHSIG = 1


def registry_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"trustgate-{os.getuid()}" / "children"


class UntrustedRegistry(Exception):
    """A registry directory someone else could have written to: its entries are never acted on."""


def _private_dir(path: Path) -> None:
    """Create ``path`` 0700, or accept it as it is when it is ours, a real directory and writable only by us.

    One readable by others (an older gateway's 0755) is narrowed to 0700: nothing
    could have been planted in it. Raises ``UntrustedRegistry`` otherwise.
    """
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        raise UntrustedRegistry(
            f"{path} is not a directory of this user writable only by it "
            f"(mode {stat.filemode(info.st_mode)}, owner uid {info.st_uid})"
        )
    if info.st_mode & 0o077:
        path.chmod(0o700)


def _private_registry() -> Path | None:
    """The registry directory, created and checked; None (logged once per directory) when it cannot be trusted."""
    folder = registry_dir()
    try:
        _private_dir(folder.parent)
        _private_dir(folder)
    except (OSError, UntrustedRegistry) as exc:
        _warn_untrusted(str(folder), str(exc))
        return None
    return folder


@functools.cache
def _warn_untrusted(folder: str, why: str) -> None:
    log.warning(
        "child-process registry %s not used (%s); children still die with their parent through the "
        "kernel's parent-death signal",
        folder,
        why,
    )


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


def _cmdline(pid: int) -> str | None:
    """The process's command line as the kernel shows it (``/proc/PID/cmdline``); None when gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return None


def _ours(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}").stat().st_uid == os.getuid()
    except OSError:
        return False


def register_child(pid: int, argv: Sequence[str], *, parent: int | None = None) -> None:
    """Note a started child and its parent (this process, unless a child registers itself) in the registry.

    ``argv`` names the child in the log; what identifies it is its start time and
    the command line the kernel shows now, once it has started.
    """
    folder = _private_registry()
    if folder is None:
        return
    parent = os.getpid() if parent is None else parent
    entry = {
        "pid": pid,
        "start": _start_time(pid),
        "cmdline": _cmdline(pid),
        "parent": parent,
        "parent_start": _start_time(parent),
        "argv": list(argv),
    }
    (folder / f"{pid}.json").write_bytes(orjson.dumps(entry))


def forget_child(pid: int) -> None:
    """Remove a child stopped on purpose from the registry."""
    with contextlib.suppress(FileNotFoundError):
        (registry_dir() / f"{pid}.json").unlink()


def _still_the_child(pid: int, entry: dict[str, object]) -> bool:
    """Whether ``pid`` is still the registered process: same start time, same command line, this user's."""
    return (
        entry.get("start") is not None
        and _start_time(pid) == entry["start"]
        and entry.get("cmdline") is not None
        and _cmdline(pid) == entry["cmdline"]
        and _ours(pid)
    )


@contextlib.contextmanager
def _one_reap_at_a_time(folder: Path, wait_s: float) -> Iterator[None]:
    """Hold the registry's reap lock; a reap in progress elsewhere is waited for, up to ``wait_s``.

    Past that (a reaper stopped, not dead: a dead one's lock is released with it) the reap goes on
    without the lock, logged: a stuck process must not keep a gateway from starting.
    """
    descriptor = os.open(folder / REAP_LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    log.warning("another process has been reaping stale children for %.0f s; reaping anyway", wait_s)
                    break
                time.sleep(0.05)
        yield
    finally:
        os.close(descriptor)  # releases the lock


def reap_stale_children(wait_s: float = 5.0) -> list[int]:
    """Kill registered children whose parent has died, and wait up to ``wait_s`` for them to be gone; returns
    their pids. A reap in progress in another process is waited for first (up to twice ``wait_s``: its own
    wait, and its scan), so that whatever it killed is gone too when this returns."""
    folder = _private_registry()
    if folder is None:
        return []
    with _one_reap_at_a_time(folder, 2 * wait_s):
        return _reap(folder, wait_s)


def _reap(folder: Path, wait_s: float) -> list[int]:
    killed: list[int] = []
    for file in sorted(folder.glob("*.json")):
        try:
            entry = orjson.loads(file.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue
        parent, child = int(entry["parent"]), int(entry["pid"])
        if entry["parent_start"] is not None and _start_time(parent) == entry["parent_start"]:
            continue  # its parent still runs: not stale
        if _still_the_child(child, entry):
            log.warning(
                "killing stale child process %d left by dead process %d: %s", child, parent, " ".join(entry["argv"][:3])
            )
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
            killed.append(child)
        with contextlib.suppress(FileNotFoundError):
            file.unlink()
    deadline = time.monotonic() + wait_s
    while any(_start_time(pid) is not None for pid in killed) and time.monotonic() < deadline:
        time.sleep(0.05)
    return killed
