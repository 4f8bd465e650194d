"""``trustgate eval replay``: feedback replay through a real gateway, and its report (report.md, results.json).

``--upstream config`` serves a gateway for the given config (default: the
embedded local model); ``--upstream capable`` serves the scripted capable model
(``scripted_upstream.py``) and a gateway in front of it. Either way the gateway
is fresh: its records and fits go to the report folder, so no earlier label or
fit leaks into the run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import secrets
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx

from .assembly import git_commit, now_utc, strict_json
from .cli import command_line
from .datasets import EvalItem, load_items, sample_questions
from .gateway import config_file, gateway_config, gateway_settings, own_local_port, serve_gateway
from .metrics import auroc, bootstrap_ci, expected_calibration_error
from .progress import progress_bar
from .replay import ReplayAnswer, ReplayOutcome, ReplaySpec, replay
from .scripted_upstream import CapableModel, capable_upstream
from .serving import serve_app

__all__ = ["eval_replay"]

SYSTEM = "Answer the question in one short sentence."
COMPONENTS = {"bc": "consistency", "fc": "factcheck", "lp": "logprob", "rag": "rag"}
# The scores the report sets side by side: (label, how to read one answer's score, is it a probability).
Reader = Callable[[ReplayAnswer], float | None]
SCORES: list[tuple[str, str, Reader, bool]] = [
    ("learned", "Trust_OV as the gateway gave it (learned where the fit was used)", lambda a: a.score, True),
    ("default", "default Trust_OV (the configured combination, same components)", lambda a: a.default, True),
    ("lp", "lp: geometric-mean token probability", lambda a: a.features.get("lp"), True),
    ("sc", "sc: sampled-answer agreement", lambda a: a.features.get("sc"), True),
    ("bc", "Trust_BC", lambda a: a.features.get("bc"), True),
    ("fc", "Trust_FC", lambda a: a.features.get("fc"), True),
    ("lp_mean", "mean token log-probability", lambda a: a.features.get("lp_mean"), False),
    (
        "length",
        "answer length, shorter = more trusted (-log(1 + words))",
        lambda a: -a.features["length"] if "length" in a.features else None,
        False,
    ),
]


def _components(raw: dict[str, Any], components: list[str]) -> None:
    scoring = raw.setdefault("trustgate", {}).setdefault("scoring", {})
    for name, section in COMPONENTS.items():
        scoring.setdefault(section, {})["enabled"] = name in components


def _fresh_gateway(raw: dict[str, Any], args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """``raw`` with this run's own store (its fits live in it), the learning rule asked for, labels sent and
    refits made as fast as the run makes them, and a patient sync wait."""
    section = raw.setdefault("trustgate", {})
    section["store"] = {**(section.get("store") or {}), "path": str(out / "records.sqlite3")}
    scoring = section.setdefault("scoring", {})
    scoring["feedback"] = {
        "refit_every": args.refit_every,
        "min_labels": args.min_labels,
        "labels_per_minute": None,
        "min_refit_interval_s": 0,
    }
    scoring["allow_client_mode"] = "any"
    scoring["sync_timeout_s"] = max(float(scoring.get("sync_timeout_s") or 0), 300.0)
    scoring.setdefault("queue", {})["scorer_timeout_s"] = 290.0
    _components(raw, args.components.split(","))
    own_local_port(raw)
    if args.max_checks:
        scoring.setdefault("consistency", {})["max_checks"] = args.max_checks
    return raw


@contextlib.asynccontextmanager
async def _gateway(args: argparse.Namespace, items: list[EvalItem], out: Path) -> AsyncIterator[tuple[str, str, str]]:
    """(gateway URL, model group, master key) of a fresh gateway in front of the chosen upstream."""
    if args.upstream == "capable":
        async with serve_app(capable_upstream(CapableModel(items, seed=args.seed))) as upstream:
            key = f"sk-replay-{secrets.token_hex(8)}"
            raw = {
                "model_list": [
                    {
                        "model_name": "capable",
                        "litellm_params": {
                            "model": "openai/capable",
                            "api_base": f"{upstream}/v1",
                            "api_key": "none",
                            "timeout": 60,
                        },
                    }
                ],
                "general_settings": {"master_key": key},
                "trustgate": {"local_upstream": {"enabled": False}},
            }
            async with serve_gateway(_fresh_gateway(raw, args, out)) as (url, _):
                yield url, "capable", key
        return
    source = config_file(args.config)
    raw = _fresh_gateway(gateway_config(source), args, out)
    async with serve_gateway(raw, source) as (url, settings):
        if settings.master_key is None:
            raise SystemExit("trustgate eval replay needs a master_key in the config (feedback and calibration)")
        model = args.model or next(iter(settings.model_groups()))
        yield url, model, settings.master_key.get_secret_value()


def _figures(answers: list[ReplayAnswer], resamples: int, seed: int) -> dict[str, dict[str, Any]]:
    table: dict[str, dict[str, Any]] = {}
    for name, title, read, probability in SCORES:
        pairs = [(value, int(a.correct)) for a in answers if (value := read(a)) is not None]
        if not pairs:
            continue
        scores, labels = [s for s, _ in pairs], [y for _, y in pairs]
        interval = bootstrap_ci(auroc, scores, labels, resamples=resamples, seed=seed)
        table[name] = {
            "title": title,
            "n": len(pairs),
            "auroc": auroc(scores, labels),
            "auroc_ci": [interval.low, interval.high],
            "ece": expected_calibration_error(scores, labels) if probability else None,
        }
    return table


def _fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def _markdown(args: argparse.Namespace, result: dict[str, Any]) -> str:
    held, calibration = result["held_out"], result["calibration"] or {}
    lines = [
        f"# {args.title or 'Feedback replay: ' + result['model']}",
        "",
        "```bash",
        command_line(args),
        "```",
        "",
        f"{result['created_at']}, commit {result['git_commit']}; {result['items']} questions, "
        f"{result['fed']} labels sent as feedback, {result['held_out_items']} held out "
        f"({result['held_out_correct']} right); {result['upstream_calls']} upstream calls, "
        f"{result['duration_s']:.0f} s.",
        "",
        f"After the refit on the fed half the gateway reported **{calibration.get('combination', '–')}** "
        f"combination: {calibration.get('reason', 'no refit report')}.",
        "",
    ]
    fit = calibration.get("fit")
    if fit:
        weights = ", ".join(f"{f} {w:+.3f}" for f, w in zip(fit["features"], fit["weights"], strict=True))
        lines += [
            f"Learned fit `{fit['id']}`: intercept {fit['intercept']:+.3f}, weights (raw features) {weights}.",
            "",
        ]
    lines += [
        "## Held-out half (scored after the refit)",
        "",
        "| score | n | AUROC [95% CI] | ECE |",
        "|---|---|---|---|",
    ]
    for entry in held.values():
        low, high = entry["auroc_ci"]
        lines.append(
            f"| {entry['title']} | {entry['n']} | {_fmt(entry['auroc'])} [{_fmt(low, 2)}, {_fmt(high, 2)}] "
            f"| {_fmt(entry['ece'])} |"
        )
    lines += [
        "",
        "## The gateway's cross-validated figures on the fed half (`GET /v1/trust/calibration`)",
        "",
        "| score | AUROC | ECE |",
        "|---|---|---|",
    ]
    for name, area in (calibration.get("auroc") or {}).items():
        lines.append(f"| {name} | {_fmt(area)} | {_fmt((calibration.get('ece') or {}).get(name))} |")
    lines += ["", *[f"- {note}" for note in args.note]]
    if result["failures"]:
        lines += ["", f"Failed items ({len(result['failures'])}):", *[f"- {f}" for f in result["failures"]]]
    return "\n".join(lines) + "\n"


async def _run(args: argparse.Namespace, items: list[EvalItem], out: Path) -> tuple[ReplayOutcome, str]:
    async with _gateway(args, items, out) as (url, model, key):
        spec = ReplaySpec(
            model=model,
            key=key,
            system=None if args.upstream == "capable" else SYSTEM,
            refit_every=args.refit_every,
            ask_logprobs=args.upstream == "config",
        )
        async with httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(900.0, connect=10.0)) as client:
            with progress_bar(len(items), f"replay {model}", {}) as advance:
                return await replay(client, spec, items, on_done=lambda: advance(None)), model


def eval_replay(args: argparse.Namespace) -> int:
    items = sample_questions(
        load_items(args.dataset, "answer", data_dir=args.data_dir, path=args.file), args.limit, args.sample_seed
    )
    reports = gateway_settings(args.config).trustgate.scoring.data_dir / "eval" / "reports"
    out = args.out or reports / f"replay-{args.upstream}-{int(time.time())}"
    out.mkdir(parents=True, exist_ok=True)
    # a fresh gateway: no earlier label, nor fit (the fits live in the record store)
    for stale in ("records.sqlite3", "records.sqlite3-wal", "records.sqlite3-shm"):
        (out / stale).unlink(missing_ok=True)
    started = time.perf_counter()
    outcome, model = asyncio.run(_run(args, items, out))
    held = [a for a in outcome.answers if not a.fed]
    result = {
        "model": model,
        "created_at": now_utc(),
        "git_commit": git_commit(),
        "items": len(items),
        "fed": sum(a.fed for a in outcome.answers),
        "held_out_items": len(held),
        "held_out_correct": sum(a.correct for a in held),
        "upstream_calls": outcome.upstream_calls,
        "duration_s": time.perf_counter() - started,
        "calibration": outcome.calibration,
        "held_out": _figures(held, args.bootstrap, args.seed),
        "failures": outcome.failures,
        "answers": [
            {
                "id": a.item_id,
                "fed": a.fed,
                "correct": a.correct,
                "score": a.score,
                "default": a.default,
                "method": a.method,
                "fit_id": a.fit_id,
                "informative": a.informative,
                "features": a.features,
            }
            for a in outcome.answers
        ],
    }
    result = strict_json(result)
    (out / "results.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    (out / "report.md").write_text(_markdown(args, result), encoding="utf-8")
    print(f"report: {out / 'report.md'}")
    return 0
