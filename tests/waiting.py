"""Polling for a state another thread or process reaches: a condition, a process gone, a fresh limit window."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from proxy.base.limits import WINDOW_S


def wait_until(condition: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not alive(pid)


def in_a_fresh_limit_window(needed_s: float = 15.0) -> None:
    """Rate limits count in fixed windows of the wall clock (``proxy.base.limits``): a test that fills a window
    and then expects a refusal must not have the window turn under it. With fewer than ``needed_s`` seconds of
    this window left, wait for the next one."""
    left = WINDOW_S - time.time() % WINDOW_S
    if left < needed_s:
        time.sleep(left + 0.05)
