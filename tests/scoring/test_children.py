"""Child servers die with the process that started them, and a restart kills stale ones.

A real parent process (a Python subprocess) starts a real child (``sleep``)
the way the gateway starts Oxigraph and llama.cpp; the test SIGKILLs the
parent, so no clean-up code of the parent runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from scoring.children import REAP_LOCK, reap_stale_children, register_child, registry_dir
from tests.waiting import alive, wait_gone

PARENT = """
import subprocess, sys, time
from scoring.children import die_with_parent, register_child
argv = ["sleep", "300"]
preexec = die_with_parent() if sys.argv[1] == "signal" else None
child = subprocess.Popen(argv, preexec_fn=preexec)
register_child(child.pid, argv)
print(child.pid, flush=True)
time.sleep(300)
"""


@pytest.fixture
def temp_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """This test's own registry, for the test process and its parents alike."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


def start_parent(mode: str, environ: dict[str, str]) -> tuple[subprocess.Popen[str], int]:
    parent = subprocess.Popen([sys.executable, "-c", PARENT, mode], stdout=subprocess.PIPE, text=True, env=environ)
    assert parent.stdout is not None
    with parent.stdout:  # it prints only the child's pid
        return parent, int(parent.stdout.readline())


@pytest.mark.integration
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_child_dies_when_its_parent_is_sigkilled(temp_registry: dict[str, str]) -> None:
    parent, child = start_parent("signal", temp_registry)
    assert alive(child)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    assert wait_gone(child)


@pytest.mark.integration
def test_a_restart_kills_the_children_of_a_dead_parent(temp_registry: dict[str, str]) -> None:
    """Without the signal (another OS, or it did not fire) the orphan lives on until the next start reaps it."""
    parent, child = start_parent("no-signal", temp_registry)
    live_parent, live_child = start_parent("no-signal", temp_registry)
    try:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        time.sleep(0.2)
        assert alive(child)  # an orphan: nothing else would stop it
        assert reap_stale_children() == [child]
        assert wait_gone(child)
        assert alive(live_child)  # its parent still runs: not stale
        assert sorted(p.name for p in registry_dir().glob("*.json")) == [f"{live_child}.json"]
    finally:
        live_parent.kill()
        live_parent.wait()
        os.kill(live_child, signal.SIGKILL)


@contextlib.contextmanager
def another_reap_in_progress() -> Iterator[None]:
    """The registry's reap lock, held as another process's reap holds it while its kills die."""
    folder = registry_dir()
    folder.mkdir(parents=True, mode=0o700, exist_ok=True)
    with (folder / REAP_LOCK).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.mark.integration
def test_a_reap_waits_for_one_in_progress_elsewhere(temp_registry: dict[str, str]) -> None:
    """Two starts at once: the one that finds the stale entry already taken must not return while the child the
    other killed may still hold its port (it would bind that port, find it in use, and fail to start)."""
    parent, child = start_parent("no-signal", temp_registry)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    with ThreadPoolExecutor(1) as pool:
        with another_reap_in_progress():
            reaping = pool.submit(reap_stale_children)
            time.sleep(0.3)
            assert not reaping.done()  # waits for the other reap
            os.kill(child, signal.SIGKILL)  # what the other reap does with the entry it took
            (registry_dir() / f"{child}.json").unlink()
            assert wait_gone(child)
        assert reaping.result(timeout=10) == []


@pytest.mark.integration
def test_a_reap_held_up_past_its_bound_goes_on_without_the_lock(
    temp_registry: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """A reaper that is stopped (not dead: a dead one's lock goes with it) must not keep a gateway from starting."""
    parent, child = start_parent("no-signal", temp_registry)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    with another_reap_in_progress():
        assert reap_stale_children(wait_s=0.5) == [child]
        assert wait_gone(child)
    assert "reaping anyway" in caplog.text


@pytest.mark.integration
def test_a_recycled_pid_is_never_killed(temp_registry: dict[str, str]) -> None:
    """A registry entry whose pid now belongs to another process (other start time) is only dropped."""
    bystander = subprocess.Popen(["sleep", "300"])
    try:
        folder = registry_dir()
        folder.mkdir(parents=True)
        (folder / f"{bystander.pid}.json").write_text(
            f'{{"pid": {bystander.pid}, "start": 1, "parent": 999999999, "parent_start": 1, "argv": ["x"]}}'
        )
        assert reap_stale_children() == []
        assert alive(bystander.pid) and not list(folder.glob("*.json"))
    finally:
        bystander.kill()
        bystander.wait()


def plant(folder: Path, bystander: int, *, cmdline: str | None) -> Path:
    """A registry entry naming ``bystander`` (its true start time) as the orphan of a dead parent."""
    start = int(Path(f"/proc/{bystander}/stat").read_text().rsplit(")", 1)[1].split()[19])
    entry = folder / f"{bystander}.json"
    entry.write_text(
        json.dumps(
            {
                "pid": bystander,
                "start": start,
                "cmdline": cmdline,
                "parent": 999999999,
                "parent_start": 1,
                "argv": ["sleep"],
            }
        )
    )
    return entry


@pytest.mark.integration
def test_a_registry_others_can_write_to_is_never_read(temp_registry: dict[str, str]) -> None:
    """In a shared /tmp another user can make the directory first: a 0777 registry is not acted on."""
    bystander = subprocess.Popen(["sleep", "300"])
    try:
        folder = registry_dir()
        folder.mkdir(parents=True)
        for made in (folder, folder.parent):
            made.chmod(0o777)
        cmdline = Path(f"/proc/{bystander.pid}/cmdline").read_bytes().decode()
        entry = plant(folder, bystander.pid, cmdline=cmdline)  # a perfect entry: only the directory gives it away
        assert reap_stale_children(wait_s=0.5) == []
        assert alive(bystander.pid) and entry.exists()
    finally:
        bystander.kill()
        bystander.wait()


@pytest.mark.integration
@pytest.mark.parametrize("cmdline", ["oxigraph\0serve-read-only\0", None])
def test_an_entry_naming_another_program_is_never_killed(temp_registry: dict[str, str], cmdline: str | None) -> None:
    """Same pid and start time, but not the command line registered (or none: an entry of an older format)."""
    bystander = subprocess.Popen(["sleep", "300"])
    try:
        folder = registry_dir()
        folder.mkdir(parents=True, mode=0o700)
        entry = plant(folder, bystander.pid, cmdline=cmdline)
        assert reap_stale_children(wait_s=0.5) == []
        assert alive(bystander.pid) and not entry.exists()
    finally:
        bystander.kill()
        bystander.wait()


@pytest.mark.unit
def test_the_registry_directories_are_made_private(temp_registry: dict[str, str]) -> None:
    """Created 0700; an older gateway's 0755 directory (writable by no one else) is narrowed, not refused."""
    registry_dir().parent.mkdir(mode=0o755)
    register_child(os.getpid(), ["pytest"])
    for folder in (registry_dir(), registry_dir().parent):
        assert folder.stat().st_mode & 0o777 == 0o700
    assert (registry_dir() / f"{os.getpid()}.json").exists()


NOBODY = 65534
needs_root = pytest.mark.skipif(os.getuid() != 0, reason="another user's directory and process need root to make")


def cmdline_of(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode()


@pytest.mark.integration
@needs_root
@pytest.mark.parametrize("owned", ["user-directory", "registry"])
def test_a_registry_directory_of_another_user_is_never_read(temp_registry: dict[str, str], owned: str) -> None:
    """Made first by another local user, even 0700 (so writable by that user alone): never acted on."""
    bystander = subprocess.Popen(["sleep", "300"])
    try:
        folder = registry_dir()
        folder.mkdir(parents=True, mode=0o700)
        folder.parent.chmod(0o700)
        entry = plant(folder, bystander.pid, cmdline=cmdline_of(bystander.pid))  # a perfect entry
        os.chown(folder.parent if owned == "user-directory" else folder, NOBODY, NOBODY)
        assert reap_stale_children(wait_s=0.5) == []
        assert alive(bystander.pid) and entry.exists()
    finally:
        bystander.kill()
        bystander.wait()


@pytest.mark.integration
@needs_root
def test_an_entry_naming_another_users_process_is_never_killed(temp_registry: dict[str, str]) -> None:
    """Its pid, start time and command line all match, but the process is not this user's."""
    bystander = subprocess.Popen(["sleep", "300"], user=NOBODY)
    try:
        folder = registry_dir()
        folder.mkdir(parents=True, mode=0o700)
        folder.parent.chmod(0o700)
        entry = plant(folder, bystander.pid, cmdline=cmdline_of(bystander.pid))
        assert reap_stale_children(wait_s=0.5) == []
        assert alive(bystander.pid) and not entry.exists()
    finally:
        bystander.kill()
        bystander.wait()
