"""CPU time from /proc: of one process, of a process group, and of the whole machine, and a wait for quiet.

On a small machine the load generator, the servers measured and other programs share the cores: CPU
per request is the figure that depends least on that sharing, and the machine's busy time minus the
benchmark's own is the noise figure.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from pathlib import Path

__all__ = ["QUIET_CORES", "group_cpu_seconds", "machine_busy_seconds", "process_cpu_seconds", "wait_for_quiet"]

# Below this many busy cores (between phases, servers idle) the machine counts as quiet.
QUIET_CORES = 0.2
# /proc counts CPU time in clock ticks.
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def group_cpu_seconds(pgid: int) -> float:
    """User+system CPU of every live process in a process group (Linux /proc; 0.0 elsewhere).

    Servers run in their own session, so their group holds the server and any
    worker it forks; summing the group keeps that accounting honest.
    """
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = _stat_fields(stat)
            if int(fields[2]) == pgid:  # fields[0] is the state, [2] the process group
                total += _cpu_ticks(fields)
    return total / CLOCK_TICKS


def process_cpu_seconds(pid: int) -> float:
    """User+system CPU of one process (all its threads, none of its children), from /proc."""
    return _cpu_ticks(_stat_fields(Path(f"/proc/{pid}/stat"))) / CLOCK_TICKS


def _stat_fields(stat: Path) -> list[str]:
    """``/proc/PID/stat`` after the command name (which may hold spaces): field 3 of proc(5) is index 0."""
    return stat.read_text().rsplit(")", 1)[1].split()


def _cpu_ticks(fields: list[str]) -> int:
    return int(fields[11]) + int(fields[12])  # utime, stime


def machine_busy_seconds() -> float:
    """CPU time the whole machine spent busy (all cores, steal included), from /proc/stat.

    Minus what the benchmark's own processes used, this is what other programs
    took during a phase: on a shared two-core machine that is the noise figure.
    """
    with contextlib.suppress(OSError, IndexError, ValueError):
        user, nice, system, _idle, _iowait, irq, softirq, steal = (
            int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]
        )
        return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS
    return math.nan


def wait_for_quiet(max_seconds: float, threshold_cores: float = QUIET_CORES) -> float:
    """Wait (at most ``max_seconds``) until the machine is nearly idle; return the last load seen.

    Called between phases, when the benchmark's own servers are idle, so any
    busy CPU belongs to other programs that would otherwise skew the phase.
    """
    deadline = time.monotonic() + max_seconds
    while True:
        before = machine_busy_seconds()
        time.sleep(1.0)
        cores = machine_busy_seconds() - before
        if not cores > threshold_cores or time.monotonic() >= deadline:  # NaN (no /proc) counts as quiet
            return cores
