"""``trustgate eval``'s entry point: run the task, and turn the errors a user can fix into one line each.

Ctrl-C stops a run; rerunning the same command resumes it from the cache.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from collections.abc import Callable, Iterator

from scoring import CalibrationError, ScorerAssetsError
from scoring.rag.cases import CaseError

from .claims_command import eval_claims
from .datasets import DatasetError
from .mc_command import eval_truthfulqa_mc
from .mc_runner import NoLogprobs
from .rag_command import eval_rag
from .replay_command import eval_replay
from .run_command import eval_run
from .triage_command import eval_triage

__all__ = ["run_eval_command"]

TASKS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": eval_run,
    "truthfulqa-mc": eval_truthfulqa_mc,
    "rag": eval_rag,
    "replay": eval_replay,
    "claims": eval_claims,
    "triage": eval_triage,
}


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[None]:
    """SIGINT and SIGTERM raise KeyboardInterrupt, even where the shell ignored SIGINT (background jobs).

    The interrupt unwinds the run, so the local model server it started is
    stopped and everything finished so far stays in the cache.
    """
    previous = {signum: signal.signal(signum, signal.default_int_handler) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def run_eval_command(args: argparse.Namespace) -> int:
    try:
        with _stop_on_signals():
            return TASKS[args.eval_task](args)
    except KeyboardInterrupt:
        print("trustgate eval: interrupted; rerun the same command to resume from the cache", file=sys.stderr)
        return 130
    except (DatasetError, ScorerAssetsError, NoLogprobs, CalibrationError, CaseError) as exc:
        print(f"trustgate eval: {exc}", file=sys.stderr)
        return 2
