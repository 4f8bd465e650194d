"""``trustgate eval``: wire the gateway's config, upstream and scorers to the runner and the report.

Everything here is assembly and I/O: reading the config and dataset, opening
the upstream and scorers, the progress bar, writing the report and the
calibration file. Ctrl-C stops a run; rerunning the same command resumes it
from the cache.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from proxy.config import GatewaySettings

from ..settings import ScoringSettings
from .cache import EvalCache
from .calibration import CalibrationError, save_calibration
from .cli import command_line
from .datasets import DATASET_FILES, DatasetError, EvalItem, default_data_dir, load_items, read_truthfulqa_mc, \
    sample_questions
from .fitting import calibration_study
from .gateway import gateway_settings, open_upstream
from .mc_runner import McEvaluator, NoLogprobs
from .metrics import bootstrap_ci
from .outcome import ItemOutcome
from .progress import progress_bar
from .report import ReportContext, render_mc_markdown, write_json, write_report
from .runner import Evaluator, ItemFailure, RunSpec, evaluate_items
from .scorers import MissingAssets, open_scorers
from .summary import summarise

__all__ = ["run_eval_command"]

SCORER_TIMEOUT_S = 3600.0  # a slow local model needs minutes for ten checks; the gateway's 60 s would cut them


def run_eval_command(args: argparse.Namespace) -> int:
    try:
        return _run(args) if args.eval_task == "run" else _truthfulqa_mc(args)
    except KeyboardInterrupt:
        print("trustgate eval: interrupted; rerun the same command to resume from the cache", file=sys.stderr)
        return 130
    except (DatasetError, MissingAssets, NoLogprobs, CalibrationError) as exc:
        print(f"trustgate eval: {exc}", file=sys.stderr)
        return 2


def _model(settings: GatewaySettings, requested: str | None) -> str:
    groups = settings.model_groups()
    model = requested or next(iter(groups))
    if model not in groups:
        raise DatasetError(f"model group {model!r} is not in the config (it has {', '.join(groups)})")
    return model


def _scoring(settings: GatewaySettings, args: argparse.Namespace) -> ScoringSettings:
    """The gateway's scoring settings, seeded (so reruns ask the same checks) and with a patient timeout."""
    scoring = settings.trustgate.scoring
    consistency = scoring.consistency.model_copy(update={
        key: value for key, value in (("seed", scoring.consistency.seed if scoring.consistency.seed is not None
                                       else args.seed),
                                      ("mode", getattr(args, "bc_mode", None)),
                                      ("max_checks", getattr(args, "max_checks", None))) if value is not None})
    return scoring.model_copy(update={"consistency": consistency,
                                      "queue": scoring.queue.model_copy(update={"scorer_timeout": SCORER_TIMEOUT_S})})


def _git_commit() -> str | None:
    try:
        found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5,
                               cwd=Path(__file__).resolve().parent)
    except (OSError, subprocess.SubprocessError):
        return None
    return found.stdout.strip() or None


def _clean(value: Any) -> Any:
    """NaN and infinities as None, so the JSON is strict."""
    if isinstance(value, float):
        return None if not math.isfinite(value) else round(value, 6)
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def _paths(args: argparse.Namespace, scoring: ScoringSettings, run_name: str) -> tuple[Path, Path]:
    base = Path(scoring.data_dir) / "eval"
    return args.cache or base / "cache.sqlite3", args.out or base / "reports" / run_name


def _notes(args: argparse.Namespace, spec: RunSpec, judge: str) -> tuple[str, ...]:
    notes = []
    if spec.mode == "given" and "bc" not in spec.components:
        notes.append("Trust_BC re-asks the model that wrote the answer; that model is not configured here, so "
                     "Trust_BC is not measured and Trust_OV (which would equal Trust_FC) is not reported.")
    if spec.mode == "given":
        notes.append(f"Trust_FC's judge is the model group `{judge}`, judging answers written by other models.")
    else:
        notes.append("Correctness labels come from gold-answer matching (normalised exact or whole-word contains "
                     "match against the dataset's gold answers), not from human judgement.")
    return (*notes, *args.note)


async def _evaluate(settings: GatewaySettings, scoring: ScoringSettings, spec: RunSpec, items: list[EvalItem],
                    cache: EvalCache, concurrency: int) -> tuple[list[ItemOutcome], list[ItemFailure], Evaluator]:
    async with open_scorers(scoring, spec.components) as scorers, open_upstream(settings) as complete:
        evaluator = Evaluator(spec, complete, cache, scorers, scoring)
        with progress_bar(len(items), f"{items[0].dataset if items else ''} {spec.mode}",
                          evaluator.counters) as advance:
            outcomes, failures = await evaluate_items(evaluator, items, concurrency=concurrency, on_done=advance)
    return outcomes, failures, evaluator


def _calibration(args: argparse.Namespace, outcomes: list[ItemOutcome],
                 fitted_on: dict[str, Any]) -> tuple[dict[str, Any], tuple[str, list[float], list[int]] | None]:
    scored = [(value, o.label) for o in outcomes if (value := o.value("ov")) is not None]
    if len(scored) < 4 or len({label for _, label in scored}) < 2:
        return {"reason": "fewer than four scored items or only one label"}, None
    study = calibration_study([s for s, _ in scored], [y for _, y in scored], method=args.calibration_method,
                              fit_fraction=args.calibration_fit, seed=args.seed, fitted_on=fitted_on)
    summary: dict[str, Any] = {"method": args.calibration_method, "seed": args.seed, "fit_items": study.fit_items,
                               "held_out_items": study.held_out_items, "reason": study.reason}
    if study.calibrator is None:
        return summary, None
    summary.update(held_out=study.figures(), calibrator=study.calibrator.to_json(),
                   path=str(args.calibration_out) if args.calibration_out else None)
    if args.calibration_out:
        save_calibration(study.calibrator, args.calibration_out)
    return summary, ("Trust_OV calibrated (held-out)", study.held_out_probabilities, study.held_out_labels)


def _run(args: argparse.Namespace) -> int:
    settings = gateway_settings(args.config)
    model, scoring = _model(settings, args.model), _scoring(settings, args)
    components = tuple(args.components.split(",")) if args.components else \
        (("bc", "fc") if args.mode == "answer" else ("fc",))
    spec = RunSpec(mode=args.mode, model=model, components=components,
                   verbal_confidence=args.verbal_confidence and args.mode == "answer")
    answers = tuple(args.answers.split(",")) if args.mode == "given" else ()
    items = sample_questions(load_items(args.dataset, args.mode, data_dir=args.data_dir, path=args.file,
                                        answers_from=answers), args.limit, args.sample_seed)
    cache_path, out = _paths(args, scoring, f"{args.dataset}-{args.mode}-{model}")
    started = time.perf_counter()
    with EvalCache(cache_path) as cache:
        outcomes, failures, evaluator = asyncio.run(_evaluate(settings, scoring, spec, items, cache, args.concurrency))
    duration = time.perf_counter() - started
    judge = scoring.factcheck.judge_model or model
    created = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    fitted_on = {"dataset": args.dataset, "mode": args.mode, "model": model, "components": "+".join(components),
                 "created_at": created}
    calibration, curve = _calibration(args, outcomes, fitted_on)
    run = {"items": len(outcomes), "failures": [f.__dict__ for f in failures], "duration_s": duration,
           "calls_made": sum(c.made for c in evaluator.counters.values()),
           "calls_cached": sum(c.cached for c in evaluator.counters.values()), "results_reused": evaluator.reused}
    context = ReportContext(
        title=args.title or f"TrustScore evaluation: {args.dataset}, {args.mode} mode, model group {model}",
        command=command_line(args), dataset=args.dataset, mode=args.mode, model=model,
        created_at=created, git_commit=_git_commit(), notes=_notes(args, spec, judge),
        settings=_describe(args, settings, scoring, spec, judge, len(items)))
    report = write_report(out, context, outcomes, _clean(summarise(outcomes, resamples=args.bootstrap,
                                                                   seed=args.seed)),
                          _clean(run), _clean(calibration), curve)
    print(f"report: {report}" + (f"; {len(failures)} items failed (rerun to retry)" if failures else ""))
    return 0


def _describe(args: argparse.Namespace, settings: GatewaySettings, scoring: ScoringSettings, spec: RunSpec,
              judge: str, items: int) -> dict[str, Any]:
    deployments = ", ".join(d.provider_model for d in settings.model_groups()[spec.model])
    described: dict[str, Any] = {
        "dataset file": str(args.file or (args.data_dir or default_data_dir()) / DATASET_FILES.get(args.dataset, "")),
        "items": f"{items} (sample of {args.limit} questions, seed {args.sample_seed})" if args.limit else items,
        "model group": f"{spec.model} ({deployments})", "components": ", ".join(spec.components),
    }
    if spec.mode == "answer":
        described["answering"] = (f"closed-book prompt of the paper's Table 4, greedy, max {spec.answer_max_tokens} "
                                  f"tokens; verbalised confidence {'on' if spec.verbal_confidence else 'off'}")
    if "bc" in spec.components:
        bc = scoring.consistency
        described["Trust_BC"] = f"mode {bc.mode}, max_checks {bc.max_checks}, seed {bc.seed}"
    if "fc" in spec.components:
        described["Trust_FC"] = f"top_k {scoring.factcheck.top_k}, judge {judge}"
    described["bootstrap"] = f"{args.bootstrap} resamples, seed {args.seed}"
    return described


def _truthfulqa_mc(args: argparse.Namespace) -> int:
    settings = gateway_settings(args.config)
    model, scoring = _model(settings, args.model), _scoring(settings, args)
    file = args.file or (args.data_dir or default_data_dir()) / DATASET_FILES["truthfulqa"]
    questions = sample_questions(read_truthfulqa_mc(file), args.limit, args.sample_seed)
    cache_path, out = _paths(args, scoring, f"truthfulqa-mc-{model}")
    started = time.perf_counter()

    async def score_all() -> tuple[list[Any], McEvaluator]:
        async with open_upstream(settings) as complete:
            evaluator = McEvaluator(complete, cache, model)
            results = []
            with progress_bar(len(questions), "truthfulqa mc", {"mc": evaluator.counter}) as advance:
                for question in questions:
                    results.append(await evaluator.question(question))
                    advance(results[-1])
            return results, evaluator

    with EvalCache(cache_path) as cache:
        results, evaluator = asyncio.run(score_all())
    summary = _mc_summary(results, args.bootstrap, args.seed)
    run = {"questions": len(results), "duration_s": time.perf_counter() - started,
           "calls_made": evaluator.counter.made, "calls_cached": evaluator.counter.cached}
    context = ReportContext(title=args.title or f"TruthfulQA MC1/MC2 (copy-task log-probabilities), model group {model}",
                            command=command_line(args), dataset="truthfulqa", mode="mc",
                            model=model, created_at=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                            git_commit=_git_commit(), notes=tuple(args.note))
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "results.json", {"context": context, "summary": _clean(summary), "run": _clean(run),
                                      "questions": [{"id": q.id, **r.__dict__} for q, r in zip(questions, results)]})
    (out / "report.md").write_text(render_mc_markdown(context, _clean(summary), _clean(run)), encoding="utf-8")
    print(f"report: {out / 'report.md'}")
    return 0


def _mc_summary(results: list[Any], resamples: int, seed: int) -> dict[str, Any]:
    def mean_with_ci(values: list[float]) -> dict[str, Any]:
        if not values:
            return {"value": None, "ci95": [None, None], "n": 0}
        ci = bootstrap_ci(lambda s, _: float(s.mean()), values, [0] * len(values), resamples=resamples, seed=seed)
        return {"value": sum(values) / len(values), "ci95": [ci.low, ci.high], "n": len(values)}

    complete = [r for r in results if r.complete]
    return {"all": {"mc1": mean_with_ci([r.mc1 for r in results]), "mc2": mean_with_ci([r.mc2 for r in results])},
            "complete": {"mc1": mean_with_ci([r.mc1 for r in complete]),
                         "mc2": mean_with_ci([r.mc2 for r in complete])},
            "complete_fraction": len(complete) / len(results) if results else None}
