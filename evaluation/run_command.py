"""``trustgate eval run``: evaluate a labeled set, calibrate Trust_OV, and write the report."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scoring import ComponentResult, OVDetails, ScoringSettings, open_scorers, save_calibration
from scoring.combine import FEATURES, feature_values

from .assembly import cache_and_report_paths, eval_scoring_settings, git_commit, model_group, now_utc, strict_json
from .cache import EvalCache
from .cli import command_line
from .datasets import (
    BUILT_DATASETS,
    DATASET_FILES,
    EvalItem,
    capitals_file,
    default_data_dir,
    load_items,
    sample_questions,
)
from .figures import Curve
from .fitting import calibration_study, cross_validated_combination, fit_combination
from .gateway import gateway_settings, open_upstream
from .outcome import ItemOutcome
from .progress import progress_bar
from .report import ReportContext, write_report
from .runner import ANSWER_MAX_TOKENS, Evaluator, ItemFailure, RunSpec, evaluate_items
from .summary import summarise

if TYPE_CHECKING:
    from proxy import GatewaySettings

__all__ = ["eval_run"]


def _spec(args: argparse.Namespace, model: str) -> RunSpec:
    default = ("bc", "fc") if args.mode == "answer" else ("fc",)
    return RunSpec(
        mode=args.mode,
        model=model,
        components=tuple(args.components.split(",")) if args.components else default,
        verbal_confidence=args.verbal_confidence and args.mode == "answer",
        answer_logprobs=args.logprobs,
    )


async def _evaluate(
    settings: GatewaySettings,
    scoring: ScoringSettings,
    spec: RunSpec,
    items: list[EvalItem],
    cache: EvalCache,
    concurrency: int,
) -> tuple[list[ItemOutcome], list[ItemFailure], Evaluator]:
    async with contextlib.AsyncExitStack() as stack, open_upstream(settings) as complete:
        scorers = await open_scorers(scoring, stack, components=spec.components, missing_evidence="raise")
        evaluator = Evaluator(spec, complete, cache, scorers, scoring)
        label = f"{items[0].dataset if items else ''} {spec.mode}"
        with progress_bar(len(items), label, evaluator.counters) as advance:
            outcomes, failures = await evaluate_items(evaluator, items, concurrency=concurrency, on_done=advance)
    return outcomes, failures, evaluator


def _combination_features(components: tuple[str, ...]) -> tuple[str, ...]:
    """The fitted Trust_OV's features: those of the configured scorers that ran."""
    return tuple(name for name in FEATURES if name.split("_")[0] in components)


def _fit_combination(
    args: argparse.Namespace, outcomes: list[ItemOutcome], features: tuple[str, ...], fitted_on: dict[str, Any]
) -> dict[str, Any]:
    """The fitted Trust_OV: cross-validated predictions into each item (``ov_fitted``), and the fit on all
    items saved when ``--calibration-method logistic --calibration-out`` ask for it."""
    rows, labels, fed = [], [], []
    for outcome in outcomes:
        values = feature_values(outcome.components, features)
        if all(value is not None for value in values.values()):
            rows.append([float(value) for value in values.values() if value is not None])
            labels.append(outcome.label)
            fed.append(outcome)
    predictions = cross_validated_combination(rows, labels, seed=args.seed) if features else None
    if predictions is None:
        return {"reason": "too few items of each label for a cross-validated fit", "features": list(features)}
    source = "+".join(sorted({name.split("_")[0] for name in features}))
    for outcome, value in zip(fed, predictions, strict=True):
        outcome.components["ov_fitted"] = ComponentResult(
            component="ov", value=value, details=OVDetails(source=source, method="fitted", cross_validated=True)
        )
    model = fit_combination(rows, labels, features, fitted_on={**fitted_on, "components": source})
    summary: dict[str, Any] = {
        "features": list(features),
        "items": len(rows),
        "folds": 5,
        "seed": args.seed,
        "combination": model.to_json(),
    }
    if args.calibration_method == "logistic" and args.calibration_out:
        save_calibration(model, args.calibration_out)
        summary["path"] = str(args.calibration_out)
    return summary


def _calibrate(
    args: argparse.Namespace, outcomes: list[ItemOutcome], fitted_on: dict[str, Any]
) -> tuple[dict[str, Any], Curve | None]:
    """Fit on part of the items, measure on the rest; save the calibrator when ``--calibration-out`` asks."""
    if args.calibration_method == "logistic":
        return {"reason": "the logistic method fits Trust_OV itself (see the fitted combination)"}, None
    scored = [(value, o.label) for o in outcomes if (value := o.value("ov")) is not None]
    if len(scored) < 4 or len({label for _, label in scored}) < 2:
        return {"reason": "fewer than four scored items, or only one label"}, None
    study = calibration_study(
        [s for s, _ in scored],
        [y for _, y in scored],
        method=args.calibration_method,
        fit_fraction=args.calibration_fit,
        seed=args.seed,
        fitted_on=fitted_on,
    )
    summary: dict[str, Any] = {
        "method": args.calibration_method,
        "seed": args.seed,
        "fit_items": study.fit_items,
        "held_out_items": study.held_out_items,
        "reason": study.reason,
    }
    if study.calibrator is None:
        return summary, None
    summary.update(
        held_out=study.figures(),
        calibrator=study.calibrator.to_json(),
        path=str(args.calibration_out) if args.calibration_out else None,
    )
    if args.calibration_out:
        save_calibration(study.calibrator, args.calibration_out)
    return summary, ("Trust_OV calibrated (held-out)", study.held_out_probabilities, study.held_out_labels)


def _notes(args: argparse.Namespace, spec: RunSpec, judge: str) -> tuple[str, ...]:
    if spec.mode == "answer":
        notes = [
            "Correctness labels come from gold-answer matching (normalised exact or whole-word contains match "
            "against the dataset's gold answers), not from human judgement."
        ]
    else:
        notes = [f"Trust_FC's judge is the model group `{judge}`, judging answers written by other models."]
        if "bc" not in spec.components:
            notes.insert(
                0,
                "Trust_BC re-asks the model that wrote the answer; that model is not configured here, so "
                "Trust_BC is not measured and Trust_OV (which would equal Trust_FC) is not reported.",
            )
    return (*notes, *args.note)


def _describe(
    args: argparse.Namespace, settings: GatewaySettings, scoring: ScoringSettings, spec: RunSpec, judge: str, items: int
) -> dict[str, Any]:
    deployments = ", ".join(d.provider_model for d in settings.model_groups()[spec.model])
    dataset_file = args.file or (
        capitals_file()  # the built sets' WordNet (shortfacts also reads the packaged Wikipedia summaries)
        if args.dataset in BUILT_DATASETS
        else (args.data_dir or default_data_dir()) / DATASET_FILES.get(args.dataset, "")
    )
    described: dict[str, Any] = {
        "dataset file": str(dataset_file),
        "items": f"{items} (seeded sample of {args.limit} questions, seed {args.sample_seed})" if args.limit else items,
        "model group": f"{spec.model} ({deployments})",
        "components": ", ".join(spec.components),
    }
    if spec.mode == "answer":
        described["answering"] = (
            f"closed-book prompt of the paper's Table 4, greedy, at most {ANSWER_MAX_TOKENS} "
            f"tokens, log-probabilities {'asked' if spec.answer_logprobs else 'off'}; "
            f"verbalised confidence {'asked' if spec.verbal_confidence else 'off'}"
        )
    if "bc" in spec.components:
        bc = scoring.consistency
        described["Trust_BC"] = (
            f"procedure {bc.procedure}, mode {bc.mode}, max_checks {bc.max_checks}, "
            f"seed {bc.seed}" + ("; bc_paper: procedure paper" if "bc_paper" in spec.components else "")
        )
    if "fc" in spec.components:
        described["Trust_FC"] = (
            f"top_k {scoring.factcheck.top_k}, judge {judge}, judge procedure "
            f"{scoring.factcheck.judge_procedure}"
            + ("; fc_text: the paper's text judge" if "fc_text" in spec.components else "")
        )
    if "ev" in spec.components:
        ev = scoring.agreement
        described["evidence agreement"] = f"top_k {ev.top_k}, entity_top_k {ev.entity_top_k}, no upstream call"
    described["bootstrap"] = f"{args.bootstrap} resamples, seed {args.seed}"
    return described


def eval_run(args: argparse.Namespace) -> int:
    settings = gateway_settings(args.config)
    model, scoring = model_group(settings, args.model), eval_scoring_settings(settings, args)
    spec = _spec(args, model)
    answers = tuple(args.answers.split(",")) if args.mode == "given" else ()
    items = sample_questions(
        load_items(args.dataset, args.mode, data_dir=args.data_dir, path=args.file, answers_from=answers),
        args.limit,
        args.sample_seed,
    )
    cache_path, out = cache_and_report_paths(args, scoring, f"{args.dataset}-{args.mode}-{model}")
    started = time.perf_counter()
    with EvalCache(cache_path) as cache:
        outcomes, failures, evaluator = asyncio.run(_evaluate(settings, scoring, spec, items, cache, args.concurrency))
    run = {
        "items": len(outcomes),
        "failures": [asdict(f) for f in failures],
        "duration_s": time.perf_counter() - started,
        "results_reused": evaluator.reused,
        "calls_made": sum(c.made for c in evaluator.counters.values()),
        "calls_cached": sum(c.cached for c in evaluator.counters.values()),
    }
    judge, created = scoring.factcheck.judge_model or model, now_utc()
    fitted_on = {
        "dataset": args.dataset,
        "mode": args.mode,
        "model": model,
        "components": "+".join(spec.components),
        "created_at": created,
    }
    combination = _fit_combination(args, outcomes, _combination_features(spec.components), fitted_on)
    calibration, curve = _calibrate(args, outcomes, fitted_on)
    calibration["fitted_combination"] = combination
    context = ReportContext(
        title=args.title or f"TrustScore evaluation: {args.dataset}, {args.mode} mode, model group {model}",
        command=command_line(args),
        dataset=args.dataset,
        mode=args.mode,
        model=model,
        created_at=created,
        git_commit=git_commit(),
        notes=_notes(args, spec, judge),
        settings=_describe(args, settings, scoring, spec, judge, len(items)),
    )
    summary = summarise(outcomes, resamples=args.bootstrap, seed=args.seed)
    report = write_report(
        Path(out), context, outcomes, strict_json(summary), strict_json(run), strict_json(calibration), curve
    )
    print(f"report: {report}" + (f"; {len(failures)} items failed (rerun to retry them)" if failures else ""))
    return 0
