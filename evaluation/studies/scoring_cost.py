"""What trust costs: each answer's own cost beside its scoring's, per component, through a real gateway.

A fresh gateway answers capital-city questions in sync mode; each answer's
trust record is read back and its ``cost`` (answer, and scoring calls by
component: calls, tokens, US dollars) summed over the run. Variants change one
setting at a time (Trust_BC's checks, ``sc``, the sampling rate) so their
effect on the bill is measured, not guessed::

    # the scripted capable model, priced as litellm's map prices openai/gpt-4o-mini
    .venv/bin/python -m evaluation.studies.scoring_cost --upstream capable --questions 40 \\
        --out docs/eval/scoring-cost/capable
    # the embedded default (SmolLM2-135M on llama.cpp), unpriced, then priced in its config
    .venv/bin/python -m evaluation.studies.scoring_cost --upstream local --questions 10 \\
        --out docs/eval/scoring-cost/local

Each run writes ``results.json`` and ``report.md`` into ``--out``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import secrets
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from evaluation.datasets import CAPITALS_DATASET, EvalItem, load_items, sample_questions
from evaluation.gateway import gateway_config, own_local_port, serve_gateway
from evaluation.scripted_upstream import CapableModel, capable_upstream
from evaluation.serving import serve_app

# One setting changed at a time, on top of the upstream's own config; the first is the baseline.
CAPABLE_VARIANTS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "consistency.preset: paper (10 checks)": {"consistency": {"preset": "paper"}},
    "sc.enabled: false": {"sc": {"enabled": False}},
    "sample_rate: 0.5": {"sample_rate": 0.5},
}
# An illustrative price for the embedded model, per token: what a configured price gives its records.
LOCAL_PRICE = {"input_cost_per_token": 1e-7, "output_cost_per_token": 4e-7}
LOCAL_VARIANTS: dict[str, dict[str, Any]] = {"defaults (no price)": {}, "a configured price": {}}
SYSTEM = "Answer with the name only."


@dataclass
class Tally:
    """What a variant's answers and their scoring cost, summed; ``None`` dollars where any price was unknown."""

    answers: int = 0
    scored: int = 0  # answers whose scoring ran (sampled, and not shed or skipped)
    answer_tokens: int = 0
    answer_usd: float | None = 0.0
    scoring_usd: float | None = 0.0
    by_component: dict[str, dict[str, float | None]] = field(default_factory=dict)

    def add(self, cost: dict[str, Any] | None, scored: bool) -> None:
        self.answers += 1
        self.scored += scored
        if cost is None:  # an answer that was not sampled has no record: its own cost is in the header
            return
        self.answer_tokens += cost.get("answer_tokens") or 0
        self.answer_usd = _sum(self.answer_usd, cost.get("answer_usd"))
        self.scoring_usd = _sum(self.scoring_usd, cost.get("scoring_usd"))
        for name, part in cost.get("by_component", {}).items():
            mine = self.by_component.setdefault(
                name, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "usd": 0.0}
            )
            for figure in ("calls", "prompt_tokens", "completion_tokens"):
                mine[figure] = (mine[figure] or 0) + part[figure]
            mine["usd"] = _sum(mine["usd"], part["usd"])


def _sum(total: float | None, value: float | None) -> float | None:
    return None if total is None or value is None else total + value


def _unsampled_cost(response: httpx.Response, tally: Tally) -> None:
    """An answer scoring did not sample has no record: its cost is its header's, its tokens its reply's usage."""
    header = response.headers.get("x-trustgate-response-cost")
    tally.answer_usd = _sum(tally.answer_usd, float(header) if header is not None else None)
    usage = response.json().get("usage") or {}
    tally.answer_tokens += int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)


async def _ask(client: httpx.AsyncClient, model: str, item: EvalItem, system: str | None, tally: Tally) -> None:
    messages = [{"role": "user", "content": item.question}]
    if system is not None:
        messages.insert(0, {"role": "system", "content": system})
    response = await client.post("/v1/chat/completions", json={"model": model, "messages": messages})
    response.raise_for_status()
    record_id = response.headers.get("x-trust-id")
    if record_id is None:
        tally.add(None, scored=False)
        _unsampled_cost(response, tally)
        return
    record = (await client.get(f"/v1/trust/{record_id}")).json()
    tally.add(record.get("cost"), scored=record["status"] in ("done", "failed"))


def _scoring(raw: dict[str, Any], out: Path, variant: dict[str, Any]) -> dict[str, Any]:
    """``raw`` in sync mode with a patient wait, its own record store, and the variant's scoring settings."""
    section = raw.setdefault("trustgate", {})
    section["store"] = {"path": str(out / f"records-{secrets.token_hex(4)}.sqlite3")}
    scoring = section.setdefault("scoring", {})
    scoring.update({"mode": "sync", "sync_timeout_s": 300.0, "allow_client_mode": "any"})
    scoring.setdefault("queue", {})["scorer_timeout_s"] = 290.0
    for name, value in variant.items():
        if isinstance(value, dict):
            scoring.setdefault(name, {}).update(value)
        else:
            scoring[name] = value
    return raw


@contextlib.asynccontextmanager
async def _gateway(
    upstream: str, name: str, variant: dict[str, Any], items: list[EvalItem], out: Path
) -> AsyncIterator[tuple[str, str, str]]:
    """(gateway URL, model group, master key) of a fresh gateway for one variant."""
    if upstream == "capable":
        key = f"sk-cost-{secrets.token_hex(8)}"
        async with serve_app(capable_upstream(CapableModel(items, seed=0))) as scripted:
            deployment = {"model": "openai/gpt-4o-mini", "api_base": f"{scripted}/v1", "api_key": "none", "timeout": 60}
            raw: dict[str, Any] = {
                "model_list": [{"model_name": "capable", "litellm_params": deployment}],
                "general_settings": {"master_key": key},
            }
            async with serve_gateway(_scoring(raw, out, variant)) as (url, _):
                yield url, "capable", key
        return
    raw = gateway_config(None)
    own_local_port(raw)
    if name == "a configured price":
        raw["model_list"][0]["litellm_params"].update(LOCAL_PRICE)
    async with serve_gateway(_scoring(raw, out, variant)) as (url, settings):
        assert settings.master_key is not None
        yield url, raw["model_list"][0]["model_name"], settings.master_key.get_secret_value()


async def _run(args: argparse.Namespace, items: list[EvalItem], out: Path) -> dict[str, Tally]:
    variants = CAPABLE_VARIANTS if args.upstream == "capable" else LOCAL_VARIANTS
    results: dict[str, Tally] = {}
    for name, variant in variants.items():
        tally = results[name] = Tally()
        async with _gateway(args.upstream, name, variant, items, out) as (url, model, key):
            headers = {"authorization": f"Bearer {key}"}
            async with httpx.AsyncClient(base_url=url, headers=headers, timeout=600) as client:
                for item in items:
                    await _ask(client, model, item, None if args.upstream == "capable" else SYSTEM, tally)
        print(f"{name}: {tally.answers} answers, {tally.scored} scored", file=sys.stderr)
    return results


def _money(value: float | None) -> str:
    return "null" if value is None else f"{value:.6f}"


def _markdown(args: argparse.Namespace, results: dict[str, Tally]) -> str:
    rows = [
        "| variant | answers (scored) | answer tokens / answer | answer USD / answer | scoring calls / answer "
        "| scoring tokens / answer | scoring USD / answer | trust's share of the spend |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, tally in results.items():
        n = max(tally.answers, 1)
        calls = sum(int(part["calls"] or 0) for part in tally.by_component.values())
        tokens = sum(
            int((p["prompt_tokens"] or 0) + (p["completion_tokens"] or 0)) for p in tally.by_component.values()
        )
        answer, scoring = tally.answer_usd, tally.scoring_usd
        share = None if answer is None or scoring is None or not answer + scoring else scoring / (answer + scoring)
        rows.append(
            f"| {name} | {tally.answers} ({tally.scored}) | {tally.answer_tokens / n:.1f} | "
            f"{_money(None if answer is None else answer / n)} | {calls / n:.2f} | {tokens / n:.0f} | "
            f"{_money(None if scoring is None else scoring / n)} | "
            f"{'null' if share is None else f'{share:.1%}'} |"
        )
    parts = [
        "",
        "By component (per answer):",
        "",
        "| variant | component | calls | prompt tokens | completion tokens | USD |",
    ]
    parts.append("|---|---|---|---|---|---|")
    for name, tally in results.items():
        n = max(tally.answers, 1)
        for component, part in sorted(tally.by_component.items()):
            usd = part["usd"]
            parts.append(
                f"| {name} | {component} | {(part['calls'] or 0) / n:.2f} | {(part['prompt_tokens'] or 0) / n:.0f} | "
                f"{(part['completion_tokens'] or 0) / n:.1f} | {_money(None if usd is None else usd / n)} |"
            )
    command = f"python -m evaluation.studies.scoring_cost --upstream {args.upstream} --questions {args.questions}"
    return "\n".join([f"# Scoring cost: {args.upstream}", "", f"`{command}`", "", *rows, *parts, ""])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evaluation.studies.scoring_cost", description=__doc__)
    parser.add_argument("--upstream", choices=["capable", "local"], required=True)
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    items = sample_questions(load_items(CAPITALS_DATASET, "answer"), args.questions, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        results = asyncio.run(_run(args, items, Path(scratch)))
    (args.out / "results.json").write_text(
        json.dumps({name: asdict(tally) for name, tally in results.items()}, indent=2) + "\n"
    )
    (args.out / "report.md").write_text(_markdown(args, results))
    print(_markdown(args, results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
