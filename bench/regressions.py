"""What got worse since the last committed benchmark: ``make bench`` says so at the end of every run.

``bench.gateway_load`` writes its headline figures beside its BENCHMARKS.md
section, into ``bench/gateway_load.json``, and compares a new run with the
figures of that file as last committed (``git show HEAD:…``; the file on disk
when there is no git). A figure counts as worse when it moved in its bad
direction by more than ``TOLERANCE`` of its committed value: on a quiet machine
a request path that became 10 % more expensive shows, where the table alone
can let a 45 % regression pass unnoticed.

Against a fixed upstream delay, every figure but one moves with the machine:
on a host where the same processes took twice the CPU per request, the same
gateway's throughput ratio fell from 0.94 to 0.82 (BENCHMARKS.md). So each run
also records what the direct phase's fake upstream took per request
(``REFERENCES``), the same work on every run. Where that moved by more
than ``TOLERANCE``, the machine differs: only the figure taken relative to it,
the gateway's CPU per request over the upstream's, is judged, and the others
are shown beside it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "BASELINE",
    "FIGURES",
    "REFERENCES",
    "TOLERANCE",
    "Change",
    "committed_figures",
    "compare",
    "report",
    "write_figures",
]

TOLERANCE = 0.10  # a figure this much worse than its committed value is reported

BASELINE = Path(__file__).resolve().parent / "gateway_load.json"

Better = Literal["higher", "lower"]

_MODES = ("non-stream", "stream")
_PER_MODE: tuple[tuple[str, Better], ...] = (
    ("throughput_vs_direct", "higher"),
    ("gateway_cpu_ms_per_request", "lower"),
    ("gateway_cpu_vs_upstream", "lower"),
    ("added_p50_ms", "lower"),
    ("added_p99_ms", "lower"),
)
# The figures compared, and which way is better: TrustGate's, per mode (direct and LiteLLM are references).
FIGURES: dict[str, Better] = {f"{mode}.{name}": better for mode in _MODES for name, better in _PER_MODE}
# Judged on any machine: relative to the same run's fake upstream, whose work is the same in every run.
MACHINE_RELATIVE = frozenset(f"{mode}.gateway_cpu_vs_upstream" for mode in _MODES)
# What tells whether two runs had the same machine: the direct phase's fake upstream, CPU ms per request.
REFERENCES = tuple(f"{mode}.upstream_cpu_ms_per_request" for mode in _MODES)


@dataclass(frozen=True)
class Change:
    """One figure, as committed and as measured now; ``change`` is signed so that positive is worse.

    ``judged`` is false for a figure that moves with the machine, where the
    two runs had different ones.
    """

    name: str
    before: float
    after: float
    change: float
    judged: bool = True

    @property
    def worse(self) -> bool:
        return self.judged and self.change > TOLERANCE


def _worsening(before: float, after: float, better: Better) -> float:
    """How much worse ``after`` is than ``before``, as a fraction of ``before`` (negative: better).

    A committed value of zero or less (an added latency the run could not tell
    from the upstream's) has no scale: any rise of a lower-is-better figure from
    there counts as fully worse.
    """
    delta = (after - before) if better == "lower" else (before - after)
    if before > 0:
        return delta / before
    return 1.0 if delta > 0 else 0.0


def compare(committed: Mapping[str, float], measured: Mapping[str, float]) -> list[Change]:
    """Each figure both runs have, in ``FIGURES``' order; a figure only one of them has is left out.

    On another machine (``machine_change``) only the machine-relative figures are judged.
    """
    same_machine = machine_change(committed, measured) is None
    return [
        Change(
            name,
            committed[name],
            measured[name],
            _worsening(committed[name], measured[name], better),
            judged=same_machine or name in MACHINE_RELATIVE,
        )
        for name, better in FIGURES.items()
        if name in committed and name in measured
    ]


def machine_change(committed: Mapping[str, float], measured: Mapping[str, float]) -> tuple[str, float] | None:
    """The reference that moved most, and by what factor, where one moved by more than ``TOLERANCE``; else None
    (also where the committed run recorded none)."""
    factors = [
        (name, measured[name] / committed[name])
        for name in REFERENCES
        if committed.get(name, 0) > 0 and measured.get(name, 0) > 0
    ]
    if not factors:
        return None
    name, factor = max(factors, key=lambda item: abs(item[1] - 1))
    return (name, factor) if abs(factor - 1) > TOLERANCE else None


def report(committed: Mapping[str, float], measured: Mapping[str, float]) -> str:
    """A markdown paragraph and table: which figures got worse by more than the tolerance, and all of them, and
    whether the two runs had different machines."""
    changes = compare(committed, measured)
    if not changes:
        return (
            "No committed figures taken against the same upstream to compare with (bench/gateway_load.json): "
            "this run becomes the baseline."
        )
    worse = [c.name for c in changes if c.worse]
    verdict = (
        f"**Worse by more than {TOLERANCE:.0%}: {', '.join(worse)}.**"
        if worse
        else f"Nothing got worse by more than {TOLERANCE:.0%}."
    )
    if (moved := machine_change(committed, measured)) is not None:
        name, factor = moved
        verdict += (
            f" The direct phase's fake upstream took {factor:.2f}× its committed CPU per request "
            f"({name}): another machine, or a busier one. Only the figures relative to it are judged; "
            "the others are shown, marked *other machine*."
        )
    rows = ["| figure | last committed | this run | change (positive: worse) | |", "|---|---|---|---|---|"]
    rows += [
        f"| {c.name} | {c.before:.3f} | {c.after:.3f} | {c.change:+.1%} | "
        f"{'**worse**' if c.worse else '' if c.judged else '*other machine*'} |"
        for c in changes
    ]
    return f"Against the last committed figures (`bench/gateway_load.json`): {verdict}\n\n" + "\n".join(rows)


def committed_figures(path: Path = BASELINE, *, upstream: str) -> dict[str, float]:
    """The figures of ``path`` as of the last commit (as on disk without git); empty when there are none.

    Only figures taken against the same fake upstream (``upstream``: its answer
    time, as ``bench.harness.load.Options.upstream_delay`` names it) compare: a
    constant answer time and a varying one move the ratios apart by more than
    the tolerance (BENCHMARKS.md), so the first run of another kind becomes
    the baseline instead of a false alarm.
    """
    text: str | None = None
    try:
        shown = subprocess.run(
            ["git", "show", f"HEAD:{path.relative_to(path.parent.parent).as_posix()}"],
            cwd=path.parent,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if shown.returncode == 0:
            text = shown.stdout
    except (OSError, ValueError, subprocess.SubprocessError):
        pass
    if text is None and path.exists():
        text = path.read_text()
    if text is None:
        return {}
    committed = json.loads(text)
    if committed.get("upstream") != upstream:
        return {}
    figures = committed.get("figures", {})
    return {name: float(value) for name, value in figures.items() if name in FIGURES or name in REFERENCES}


def write_figures(figures: Mapping[str, float], meta: Mapping[str, str], path: Path = BASELINE) -> None:
    """Store a run's figures, to be committed with its BENCHMARKS.md section."""
    path.write_text(json.dumps({**meta, "figures": {k: round(v, 4) for k, v in figures.items()}}, indent=2) + "\n")
