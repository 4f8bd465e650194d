"""``trustgate eval rag``: Trust-Eval's aggregate over a JSONL of RAG cases, judged as live traffic is.

Each case is scored by the gateway's own RAG scorer (``scoring.rag``, built
from the config's ``scoring.rag`` section), its judge reached through the
gateway's upstream client behind the evaluation cache, so an interrupted run
resumes without repeating a judge call.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from scoring import RagScorer, ScorerAssetsError, ScoringJob, ScoringSettings, build_rag_scorer, rag_report
from scoring.factcheck import NLIModelError
from scoring.rag.cases import load_cases, score_cases

from .asking import CachedAsk, CallCounter
from .assembly import cache_and_report_paths, git_commit, model_group, now_utc, strict_json
from .cache import CallSite, EvalCache
from .cli import command_line
from .datasets import DatasetError
from .gateway import gateway_settings, open_upstream
from .progress import progress_bar
from .report import ReportContext, render_rag_markdown, write_json

__all__ = ["eval_rag"]


def eval_rag(args: argparse.Namespace) -> int:
    settings = gateway_settings(args.config)
    model, scoring = model_group(settings, args.model), settings.trustgate.scoring
    scorer = _rag_scorer(scoring)
    judge = "local NLI model" if scorer.judges_locally else model_group(settings, scorer.judge_model or model)
    file = Path(args.file)
    try:
        jobs = load_cases(file, model)
    except OSError as exc:
        raise DatasetError(f"cannot read {file}: {exc}") from exc
    cache_path, out = cache_and_report_paths(args, scoring, f"rag-{file.stem}-{model}")
    counter, started = CallCounter(), time.perf_counter()

    async def score_all(cache: EvalCache) -> list[dict[str, Any]]:
        async with open_upstream(settings) as complete:

            def ask_for(job: ScoringJob) -> CachedAsk:
                return CachedAsk(complete, cache, CallSite(f"rag:{file.name}", job.id, "rag", judge), counter)

            with progress_bar(len(jobs), "rag cases", {"rag": counter}) as advance:
                return await score_cases(jobs, scorer, ask_for, concurrency=args.concurrency, on_done=advance)

    with EvalCache(cache_path) as cache:
        cases = asyncio.run(score_all(cache))
    report = strict_json(rag_report(cases))
    if cases and report["judge_failures"] == len(cases):
        print(
            f"trustgate eval rag: the judge ({judge}) failed on every case, so the report measures nothing; "
            "see each case's judge_errors in results.json",
            file=sys.stderr,
        )
    run = strict_json(
        {
            "cases": len(cases),
            "duration_s": time.perf_counter() - started,
            "calls_made": counter.made,
            "calls_cached": counter.cached,
        }
    )
    context = ReportContext(
        title=args.title or f"RAG trust (Trust-Eval): {file.name}, judge {judge}",
        command=command_line(args),
        dataset=str(file),
        mode="rag",
        model=judge,
        created_at=now_utc(),
        git_commit=git_commit(),
        notes=tuple(args.note),
    )
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "results.json", {"context": context, "report": report, "run": run, "cases": strict_json(cases)})
    (out / "report.md").write_text(render_rag_markdown(context, report, run), encoding="utf-8")
    print(f"report: {out / 'report.md'}")
    return 0


def _rag_scorer(scoring: ScoringSettings) -> RagScorer:
    """The configured scorer, or a clear error when its NLI model cannot be loaded."""
    try:
        return build_rag_scorer(scoring)
    except NLIModelError as exc:
        raise ScorerAssetsError(f"cannot load the RAG judge's NLI model: {exc}") from exc
