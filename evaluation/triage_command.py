"""``trustgate eval triage``: triage's figures on labelled sets of requests with answers, printed as markdown.

No gateway, no model and no upstream: triage is a pure function of the
request and the answer, so the run is the function over each set's cases. By
default both committed sets are run: the set the rules were written against and
the held-out set written after they were frozen (the honest estimate).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .assembly import git_commit, strict_json
from .cli import command_line
from .triage_eval import (
    TRIAGE_SETS,
    TriageReport,
    load_triage_cases,
    packaged_set,
    render_triage_markdown,
    run_triage,
    triage_report,
)

__all__ = ["eval_triage"]


def eval_triage(args: argparse.Namespace) -> int:
    files: list[Path] = args.file or [packaged_set(name) for name in TRIAGE_SETS]
    command = command_line(args)
    commit = git_commit()
    documents = {}
    for file in files:
        report = triage_report(run_triage(load_triage_cases(file), repeat=args.repeat))
        title = f"Triage on {file.name}" + (f" (commit {commit})" if commit else "")
        print(render_triage_markdown(report, title=title, command=command))
        documents[file.name] = _document(report)
    if args.json:
        args.json.write_text(json.dumps(strict_json(documents), indent=1) + "\n", encoding="utf-8")
    return 0


def _document(report: TriageReport) -> dict[str, Any]:
    """Every figure of the report, and the wrong cases by id."""
    return {
        "cases": report.cases,
        "checkable_accuracy": report.checkable_accuracy,
        "kind_accuracy": report.kind_accuracy,
        "checkable": _score(report.checkable),
        "kinds": {kind: _score(score) for kind, score in report.kinds.items()},
        "confusion": [{"gold": g, "triage": t, "cases": n} for (g, t), n in sorted(report.confusion.items())],
        "by_language": {lang: {"cases": n, "checkable_right": r} for lang, (n, r) in report.by_language.items()},
        "latency_ms": report.latency_ms,
        "wrong": [{"id": o.case.id, "gold": o.case.kind, "triage": o.verdict.kind} for o in report.wrong],
    }


def _score(score: Any) -> dict[str, Any]:
    return {
        "support": score.support,
        "predicted": score.predicted,
        "precision": score.precision,
        "recall": score.recall,
    }
