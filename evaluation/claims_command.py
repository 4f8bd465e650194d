"""``trustgate eval claims``: long answers with planted false claims, through a real gateway, claim by claim.

A scripted truthful upstream (``truthful_upstream.py``) gives each item's answer, false sentence included,
and answers every check of it truthfully. A fresh gateway in front of it scores each answer in sync mode
with the scoring defaults (or the options given); the report measures what claims are for:

- answer-level AUROC of Trust_OV, right (no false sentence) against wrong;
- how often the lowest-scored claim of a wrong answer lies in its false sentence (alone at that score);
- upstream scoring calls per answer (the record's), overall and for right and wrong answers.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import statistics
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from scoring import TrustRecord
from scoring.settings import default_data_dir

from .assembly import git_commit, now_utc, strict_json
from .cli import command_line
from .gateway import serve_gateway
from .metrics import auroc
from .progress import progress_bar
from .scripted_upstream import scripted_upstream
from .serving import serve_app
from .truthful_upstream import LongAnswer, TruthfulModel, read_long_answers

__all__ = ["eval_claims"]

RECORD_TIMEOUT_S = 300.0
MODEL = "truthful"


@dataclass(frozen=True)
class ScoredLongAnswer:
    """One answer as the report needs it."""

    id: str
    correct: bool
    false_sentence: int | None
    score: float | None
    calls: int
    claims: list[tuple[int, float | None]]  # (the sentence each checked claim lies in, its score)

    def false_is_lowest(self) -> bool:
        """The false sentence's claims alone hold the lowest claim score."""
        scored = [(sentence, score) for sentence, score in self.claims if score is not None]
        if self.false_sentence is None or len(scored) < 2:
            return False
        low = min(score for _, score in scored)
        return {sentence for sentence, score in scored if score == low} == {self.false_sentence}


def _config(upstream: str, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    key = f"sk-claims-{secrets.token_hex(8)}"
    scoring: dict[str, Any] = {
        "allow_client_mode": "any",
        "sync_timeout_s": 300,
        "queue": {"scorer_timeout_s": 290},
        "feedback": {"learn": False},
        "claims": {"enabled": not args.whole},
    }
    for option in ("max_claims", "checks_per_claim"):
        if getattr(args, option) is not None:
            scoring["claims"][option] = getattr(args, option)
    return {
        "model_list": [
            {
                "model_name": MODEL,
                "litellm_params": {"model": f"openai/{MODEL}", "api_base": f"{upstream}/v1", "api_key": "none"},
            }
        ],
        "general_settings": {"master_key": key},
        "trustgate": {
            "local_upstream": {"enabled": False},
            "store": {"path": str(out / "records.sqlite3")},
            "scoring": scoring,
        },
    }


@contextlib.asynccontextmanager
async def _gateway(items: list[LongAnswer], out: Path, args: argparse.Namespace) -> AsyncIterator[tuple[str, str]]:
    async with serve_app(scripted_upstream(TruthfulModel(items))) as upstream:
        raw = _config(upstream, out, args)
        async with serve_gateway(raw) as (url, _):
            yield url, raw["general_settings"]["master_key"]


async def _record(client: httpx.AsyncClient, key: str, record_id: str) -> TrustRecord:
    deadline = time.monotonic() + RECORD_TIMEOUT_S
    while True:
        response = await client.get(f"/v1/trust/{record_id}", headers={"authorization": f"Bearer {key}"})
        response.raise_for_status()
        record = TrustRecord.model_validate(response.json())
        if record.status != "pending" or time.monotonic() > deadline:
            return record
        await asyncio.sleep(0.5)


async def _score(client: httpx.AsyncClient, key: str, item: LongAnswer) -> ScoredLongAnswer:
    response = await client.post(
        "/v1/chat/completions",
        headers={"authorization": f"Bearer {key}", "x-trustgate-mode": "sync"},
        json={"model": MODEL, "messages": [{"role": "user", "content": item.question}], "max_tokens": 128},
    )
    response.raise_for_status()
    record = await _record(client, key, response.headers["x-trust-id"])
    false = next((index for index, sentence in enumerate(item.sentences) if sentence.false), None)
    return ScoredLongAnswer(
        id=item.id,
        correct=item.correct,
        false_sentence=false,
        score=record.score,
        calls=record.upstream_calls,
        claims=[(item.sentence_at(claim.start), claim.score) for claim in record.claims if claim.checked],
    )


def _figures(answers: list[ScoredLongAnswer]) -> dict[str, Any]:
    scored = [a for a in answers if a.score is not None]
    wrong = [a for a in answers if not a.correct]

    def calls(group: list[ScoredLongAnswer]) -> float | None:
        return statistics.fmean(a.calls for a in group) if group else None

    return {
        "answers": len(answers),
        "wrong": len(wrong),
        "auroc": auroc([float(a.score or 0.0) for a in scored], [int(a.correct) for a in scored]) if scored else None,
        "false_lowest": sum(a.false_is_lowest() for a in wrong) / len(wrong) if wrong else None,
        "calls_per_answer": calls(answers),
        "calls_right": calls([a for a in answers if a.correct]),
        "calls_wrong": calls(wrong),
        "claims_per_answer": statistics.fmean(len(a.claims) or 1 for a in answers) if answers else None,
    }


def _fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _markdown(args: argparse.Namespace, result: dict[str, Any]) -> str:
    figures = result["figures"]
    return "\n".join(
        [
            f"# {args.title or 'Long answers, claim by claim'}",
            "",
            "```bash",
            command_line(args),
            "```",
            "",
            f"{result['created_at']}, commit {result['git_commit']}; {figures['answers']} answers, "
            f"{figures['wrong']} with one false sentence; {result['duration_s']:.0f} s.",
            "",
            "| figure | value |",
            "|---|---|",
            f"| answer-level AUROC (Trust_OV, right vs wrong) | {_fmt(figures['auroc'])} |",
            f"| wrong answers whose lowest-scored claim is the false sentence | {_fmt(figures['false_lowest'])} |",
            f"| scoring calls per answer | {_fmt(figures['calls_per_answer'], 2)} |",
            f"| ... right answers / wrong answers | {_fmt(figures['calls_right'], 2)} / "
            f"{_fmt(figures['calls_wrong'], 2)} |",
            f"| claims checked per answer | {_fmt(figures['claims_per_answer'], 2)} |",
            "",
            *[f"- {failure}" for failure in result["failures"]],
        ]
    )


async def _run(
    args: argparse.Namespace, items: list[LongAnswer], out: Path
) -> tuple[list[ScoredLongAnswer], list[str]]:
    answers: list[ScoredLongAnswer] = []
    failures: list[str] = []
    timeout = httpx.Timeout(RECORD_TIMEOUT_S, connect=10.0)
    async with _gateway(items, out, args) as (url, key), httpx.AsyncClient(base_url=url, timeout=timeout) as client:
        with progress_bar(len(items), "claims", {}) as advance:
            for item in items:
                try:
                    answers.append(await _score(client, key, item))
                except (httpx.HTTPError, KeyError) as exc:
                    failures.append(f"{item.id}: {type(exc).__name__}: {exc}"[:300])
                advance(None)
    return answers, failures


def eval_claims(args: argparse.Namespace) -> int:
    items = read_long_answers(args.file)
    out = args.out or default_data_dir(os.environ) / "eval" / "reports" / f"claims-{int(time.time())}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "records.sqlite3").unlink(missing_ok=True)
    started = time.perf_counter()
    answers, failures = asyncio.run(_run(args, items, out))
    result = strict_json(
        {
            "created_at": now_utc(),
            "git_commit": git_commit(),
            "duration_s": time.perf_counter() - started,
            "figures": _figures(answers),
            "failures": failures,
            "answers": [asdict(a) for a in answers],
        }
    )
    (out / "results.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    (out / "report.md").write_text(_markdown(args, result) + "\n", encoding="utf-8")
    print(f"report: {out / 'report.md'}")
    return 0
