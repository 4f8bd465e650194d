"""What the ``trustgate eval`` tasks assemble the same way: settings, model group, paths, report stamps."""

from __future__ import annotations

import argparse
import datetime
import math
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scoring import ScoringSettings

from .datasets import DatasetError

if TYPE_CHECKING:
    from proxy import GatewaySettings

__all__ = [
    "SCORER_TIMEOUT_S",
    "cache_and_report_paths",
    "eval_scoring_settings",
    "git_commit",
    "model_group",
    "now_utc",
    "strict_json",
]

SCORER_TIMEOUT_S = 3600.0  # a slow local model needs minutes for ten checks; the gateway's 60 s would cut them


def model_group(settings: GatewaySettings, requested: str | None) -> str:
    """The requested model group, or the config's first; it must exist."""
    groups = settings.model_groups()
    model = requested or next(iter(groups))
    if model not in groups:
        raise DatasetError(f"model group {model!r} is not in the config (it has {', '.join(groups)})")
    return model


def eval_scoring_settings(settings: GatewaySettings, args: argparse.Namespace) -> ScoringSettings:
    """The gateway's scoring settings, seeded, and with a patient timeout.

    Trust_BC's seed is the config's where the config sets one, else ``--seed`` (default 0, the
    gateway's default too): either way the eval asks the very checks that gateway asks.
    """
    scoring = settings.trustgate.scoring
    bc = scoring.consistency
    overrides = {
        "seed": bc.seed if "seed" in bc.model_fields_set else args.seed,
        "mode": getattr(args, "bc_mode", None),
        "max_checks": getattr(args, "max_checks", None),
        "procedure": getattr(args, "bc_procedure", None),
    }
    consistency = bc.model_copy(update={key: value for key, value in overrides.items() if value is not None})
    judge = getattr(args, "fc_judge", None)
    factcheck = scoring.factcheck.model_copy(update={"judge_procedure": judge}) if judge else scoring.factcheck
    queue = scoring.queue.model_copy(update={"scorer_timeout_s": SCORER_TIMEOUT_S})
    return scoring.model_copy(update={"consistency": consistency, "factcheck": factcheck, "queue": queue})


def cache_and_report_paths(args: argparse.Namespace, scoring: ScoringSettings, run_name: str) -> tuple[Path, Path]:
    """``--cache`` and ``--out``, defaulting under ``<data_dir>/eval/``."""
    base = Path(scoring.data_dir) / "eval"
    return args.cache or base / "cache.sqlite3", args.out or base / "reports" / run_name


def git_commit() -> str | None:
    """The checkout's commit, for the report's header; None outside a git checkout."""
    try:
        found = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).resolve().parent,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return found.stdout.strip() or None


def now_utc() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def strict_json(value: Any) -> Any:
    """NaN and infinities as None, floats rounded, so that the report's JSON is strict and readable."""
    if isinstance(value, float):
        return round(value, 6) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict_json(v) for v in value]
    return value
