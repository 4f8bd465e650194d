"""Trust-Eval's report over a JSONL of RAG cases, judged through the gateway's upstream client.

    python -m scoring.rag.report CASES.jsonl --config CONFIG --model GROUP [--output REPORT.json]

Each line is one case: ``question``, ``documents`` (as the request field:
``{id, title, text}`` objects or strings, cited as [1..n]), ``answer``, and
optionally ``answerable`` (bool) and ``reference_claims`` (strings). Every
case is scored by ``RagScorer`` exactly as live traffic is, with the judge
reached through ``proxy.upstream.UpstreamClient`` (same retries, timeouts and
fallbacks as the gateway) on the model group ``--model``, or through the
configured local NLI model with ``--judge nli``. The report (``aggregate.py``)
is printed as JSON; ``--output`` also writes it with every case's details.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..types import Ask, ScoringJob
from .aggregate import rag_report
from .documents import job_documents
from .labels import LABELS_KEY
from .request import InvalidRagField, parse_documents, parse_labels
from .scorer import MAX_STATEMENTS, RagScorer

if TYPE_CHECKING:
    from proxy.config import GatewaySettings

__all__ = ["CaseError", "load_cases", "main", "score_cases"]


class CaseError(ValueError):
    """A line of the cases file is not a case; the message names the line."""


def _job(line: str, number: int, model: str) -> ScoringJob:
    case = json.loads(line)
    if not isinstance(case, dict):
        raise ValueError("a case must be a JSON object")
    question, answer = case.get("question"), case.get("answer")
    if not isinstance(question, str) or not isinstance(answer, str):
        raise ValueError("'question' and 'answer' must be strings")
    documents = parse_documents(case.get("documents"))
    labels = parse_labels(case)
    return ScoringJob(id=str(case.get("id", f"case-{number}")), model=model, question=question, answer=answer,
                      documents=job_documents(documents), policy={LABELS_KEY: labels.as_policy()})


def load_cases(path: Path, model: str) -> list[ScoringJob]:
    """One scoring job per non-empty line; raises ``CaseError`` naming the first bad line."""
    jobs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            jobs.append(_job(line, number, model))
        except (ValueError, InvalidRagField) as exc:
            raise CaseError(f"{path}:{number}: {exc}") from exc
    return jobs


async def score_cases(jobs: Sequence[ScoringJob], scorer: RagScorer, ask: Ask,
                      concurrency: int = 4) -> list[dict[str, Any]]:
    """Each case's ``rag`` details, with its id and the upstream calls its judge made."""
    slots = asyncio.Semaphore(concurrency)

    async def one(job: ScoringJob) -> dict[str, Any]:
        async with slots:
            result = await scorer.score(job, ask)
        return {"id": job.id, **result.details, "value": result.value, "upstream_calls": result.upstream_calls}

    return list(await asyncio.gather(*(one(job) for job in jobs)))


@contextlib.asynccontextmanager
async def _gateway_ask(config: str | None, model: str) -> AsyncIterator[tuple[Ask, GatewaySettings]]:
    """An ``Ask`` on ``model`` through the gateway's own upstream client, and the gateway settings.

    The command line is an edge: only here does scoring reach for the proxy's
    upstream machinery, which it then uses exactly as the gateway does.
    """
    from prometheus_client import CollectorRegistry

    from exporters import build_metrics
    from proxy.app import http_client
    from proxy.ask import UpstreamAsk
    from proxy.config import default_config_path, load_settings
    from proxy.local_upstream import run_local_upstream
    from proxy.upstream import UpstreamClient

    settings = load_settings(config or default_config_path())
    async with contextlib.AsyncExitStack() as stack:
        if settings.trustgate.local_upstream.enabled:
            await stack.enter_async_context(run_local_upstream(settings.trustgate.local_upstream))
        http = await stack.enter_async_context(http_client())
        upstream = UpstreamClient(settings, http)
        stack.push_async_callback(upstream.aclose)
        upstream.require_group(model)
        yield UpstreamAsk(upstream, build_metrics(CollectorRegistry()), model, RagScorer.name), settings


def _scorer(judge: str, settings: GatewaySettings, max_statements: int) -> RagScorer:
    if judge == "llm":
        return RagScorer(max_statements=max_statements)
    factcheck = settings.trustgate.scoring.factcheck
    if not factcheck.nli_model_dir:
        raise CaseError("--judge nli needs trustgate.scoring.factcheck.nli_model_dir in the config")
    from ..factcheck.nli import LocalNLIJudge  # torch and transformers are optional

    return RagScorer(nli=LocalNLIJudge(Path(factcheck.nli_model_dir), factcheck.nli_labels),
                     max_statements=max_statements)


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    jobs = load_cases(Path(args.cases), args.model)
    async with _gateway_ask(args.config, args.model) as (ask, settings):
        cases = await score_cases(jobs, _scorer(args.judge, settings, args.max_statements), ask, args.concurrency)
    return {"report": rag_report(cases), "cases": cases}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m scoring.rag.report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", help="JSONL of RAG cases")
    parser.add_argument("--config", help="gateway YAML config (default: the embedded local-model config)")
    parser.add_argument("--model", required=True, help="model group that judges")
    parser.add_argument("--judge", choices=["llm", "nli"], default="llm",
                        help="llm: the model group; nli: the config's factcheck.nli_model_dir")
    parser.add_argument("--concurrency", type=int, default=4, help="cases scored at once")
    parser.add_argument("--max-statements", type=int, default=MAX_STATEMENTS,
                        help="statements judged per answer")
    parser.add_argument("--output", help="also write the report and every case's details here (JSON)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from proxy.config import ConfigError
    from proxy.errors import GatewayError

    try:
        result = asyncio.run(_run(args))
    except (CaseError, ConfigError, GatewayError, OSError) as exc:
        print(f"scoring.rag.report: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result["report"], indent=2))
    if args.output:
        Path(args.output).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
