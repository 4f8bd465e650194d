"""``trustgate eval truthfulqa-mc``: MC1/MC2 over a sample of TruthfulQA, with a markdown and JSON report."""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import asdict
from typing import Any

from .assembly import cache_and_report_paths, eval_scoring_settings, git_commit, model_group, now_utc, strict_json
from .cache import EvalCache
from .cli import command_line
from .datasets import DATASET_FILES, default_data_dir, read_truthfulqa_mc, sample_questions
from .gateway import gateway_settings, open_upstream
from .mc_runner import McEvaluator
from .metrics import bootstrap_ci
from .progress import progress_bar
from .report import ReportContext, render_mc_markdown, write_json
from .truthfulqa_mc import McResult

__all__ = ["eval_truthfulqa_mc", "mc_summary"]


def _mean_with_ci(values: list[float], resamples: int, seed: int) -> dict[str, Any]:
    if not values:
        return {"value": None, "ci95": [None, None], "n": 0}
    ci = bootstrap_ci(lambda s, _: float(s.mean()), values, [0] * len(values), resamples=resamples, seed=seed)
    return {"value": sum(values) / len(values), "ci95": [ci.low, ci.high], "n": len(values)}


def mc_summary(results: list[McResult], resamples: int, seed: int) -> dict[str, Any]:
    """Mean MC1 and MC2 with bootstrap intervals, over all questions and over the complete ones."""
    complete = [r for r in results if r.complete]
    return {
        part: {name: _mean_with_ci([getattr(r, name) for r in chosen], resamples, seed) for name in ("mc1", "mc2")}
        for part, chosen in (("all", results), ("complete", complete))
    } | {
        "complete_fraction": len(complete) / len(results) if results else None,
        "reproduced_fraction": sum(r.reproduced for r in results) / len(results) if results else None,
    }


def eval_truthfulqa_mc(args: argparse.Namespace) -> int:
    settings = gateway_settings(args.config)
    model = model_group(settings, args.model)
    file = args.file or (args.data_dir or default_data_dir()) / DATASET_FILES["truthfulqa"]
    questions = sample_questions(read_truthfulqa_mc(file), args.limit, args.sample_seed)
    cache_path, out = cache_and_report_paths(args, eval_scoring_settings(settings, args), f"truthfulqa-mc-{model}")
    started = time.perf_counter()

    async def score_all(cache: EvalCache) -> tuple[list[McResult], McEvaluator]:
        async with open_upstream(settings) as complete:
            evaluator, results = McEvaluator(complete, cache, model), []
            with progress_bar(len(questions), "truthfulqa mc", {"mc": evaluator.counter}) as advance:
                for question in questions:
                    results.append(await evaluator.question(question))
                    advance(results[-1])
            return results, evaluator

    with EvalCache(cache_path) as cache:
        results, evaluator = asyncio.run(score_all(cache))
    summary = strict_json(mc_summary(results, args.bootstrap, args.seed))
    run = strict_json(
        {
            "questions": len(results),
            "duration_s": time.perf_counter() - started,
            "calls_made": evaluator.counter.made,
            "calls_cached": evaluator.counter.cached,
        }
    )
    context = ReportContext(
        title=args.title or f"TruthfulQA MC1/MC2 (copy-task log-probabilities), model {model}",
        command=command_line(args),
        dataset="truthfulqa",
        mode="mc",
        model=model,
        created_at=now_utc(),
        git_commit=git_commit(),
        notes=tuple(args.note),
    )
    out.mkdir(parents=True, exist_ok=True)
    per_question = [{"id": q.id, **asdict(r)} for q, r in zip(questions, results, strict=True)]
    write_json(out / "results.json", {"context": context, "summary": summary, "run": run, "questions": per_question})
    (out / "report.md").write_text(render_mc_markdown(context, summary, run), encoding="utf-8")
    print(f"report: {out / 'report.md'}")
    return 0
