"""``trustgate eval``'s entry point: run the task, and turn the errors a user can fix into one line each.

Ctrl-C stops a run; rerunning the same command resumes it from the cache.
"""

from __future__ import annotations

import argparse
import sys

from .calibration import CalibrationError
from .datasets import DatasetError
from .mc_command import eval_truthfulqa_mc
from .mc_runner import NoLogprobs
from .run_command import eval_run
from .scorers import MissingAssets

__all__ = ["run_eval_command"]


def run_eval_command(args: argparse.Namespace) -> int:
    try:
        return eval_run(args) if args.eval_task == "run" else eval_truthfulqa_mc(args)
    except KeyboardInterrupt:
        print("trustgate eval: interrupted; rerun the same command to resume from the cache", file=sys.stderr)
        return 130
    except (DatasetError, MissingAssets, NoLogprobs, CalibrationError) as exc:
        print(f"trustgate eval: {exc}", file=sys.stderr)
        return 2
