"""Fewer Trust_BC calls at the same verdicts? Cheap policies against the paper's n=10.

Run from the repository root (after ``make install``)::

    .venv/bin/python -m evaluation.studies.bc_agreement record --answers 200 --budget-s 780
    .venv/bin/python -m evaluation.studies.bc_agreement report --answers 200

``record`` starts the embedded local model (SmolLM2-135M under llama.cpp, the
gateway's own start-up code, on a free port), lets it answer MixedQA questions
with the evaluation's closed-book prompt, and scores each answer with the
gateway's ``ConsistencyScorer`` on the paper's procedure with every one of the
10 checks asked (``procedure: paper``, ``mode: graded``, ``max_checks: 10``),
twice: once with seed 1 and once, independently, with seed 2 (other
distractors, other positions). Everything goes to an evaluation cache
(``--cache``, SQLite: the answers, every reply, every finished result), so a
run stopped by ``--budget-s`` or Ctrl-C resumes where it was. The other
consistency settings are the embedded config's (two worked examples per
prompt, replies cut after four tokens), as the gateway scores this model.

``report`` reads the recorded checks back (no model needed) and replays each
candidate policy (``bc_policies``) on the prefixes of the seed-1
checks: mean calls per answer, label agreement and Spearman correlation of
the graded values against the n=10 run of the same checks and against the
independent seed-2 run. The reference against its own independent run is the
noise ceiling: no policy can agree with n=10 better than n=10 agrees with
itself. The same table is then made for scripted models with known
consistency rates 0.1-0.9 (``bc_simulation``), plain and with a
letter bias, also through the real scorer.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import math
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from evaluation.asking import CachedAsk, CallCounter
from evaluation.assembly import model_group
from evaluation.cache import CallSite, EvalCache
from evaluation.datasets import EvalItem, load_items, sample_questions
from evaluation.gateway import embedded_settings_on_own_port, gateway_settings, open_upstream
from evaluation.runner import Evaluator, RunSpec
from scoring.consistency.runtime import load_generator, local_sparql_endpoint
from scoring.consistency.scorer import ConsistencyScorer
from scoring.cpu_pool import CpuParts, InThreads
from scoring.settings import ConsistencySettings
from scoring.types import BCDetails, ComponentResult, ScoringJob

from .bc_policies import Agreement, Observation, Policy, agreement, candidates, nearest_to_target, reference
from .bc_simulation import PlaceholderDistractors, ScriptedModel, SimulatedAnswer, simulated_answers

if TYPE_CHECKING:
    from proxy import GatewaySettings

COMMAND = ".venv/bin/python -m evaluation.studies.bc_agreement"
RECORDING = {"procedure": "paper", "mode": "graded", "max_checks": 10}
SEEDS = (1, 2)  # the recorded run and its independent twin
SAMPLE_SEED = 0  # which MixedQA questions: the first N of one seeded shuffle (a larger N extends a smaller one)
DEFAULT_CACHE = Path("var/bench/bc-agreement.sqlite3")


@dataclass(frozen=True)
class Recorded:
    """One answer's two independent full runs of checks."""

    id: str
    runs: tuple[list[Observation], ...]


def observations(result: ComponentResult) -> list[Observation] | None:
    """The checks of a complete n=10 result, in the order asked; None when it was not scored to the end."""
    details = result.details
    if result.error or result.value is None or not isinstance(details, BCDetails) or len(details.checks) < 10:
        return None
    return [Observation(c.consistent, c.original_probability) for c in details.checks]


def _fingerprint(settings: ConsistencySettings) -> str:
    """The settings a stored run was recorded under (the answer is the cached one of the same item)."""
    return hashlib.sha256(orjson.dumps(settings.model_dump(mode="json"))).hexdigest()[:16]


def _recording_settings(settings: GatewaySettings) -> tuple[str, dict[int, ConsistencySettings]]:
    """The model group, and per seed the config's consistency settings with every one of the 10 checks asked."""
    consistency = settings.trustgate.scoring.consistency
    return model_group(settings, None), {
        seed: consistency.model_copy(update={**RECORDING, "seed": seed}) for seed in SEEDS
    }


def _site(item: EvalItem, seed: int, model: str) -> CallSite:
    return CallSite(item.dataset, item.id, f"bc-agreement/seed-{seed}", model)


def _items(args: argparse.Namespace) -> list[EvalItem]:
    """The sampled questions in a seeded order: the file groups them by source, and a run cut short by time
    should still have a bit of every source."""
    items = sample_questions(load_items("mixedqa", "answer", data_dir=args.data_dir), args.answers, SAMPLE_SEED)
    random.Random(SAMPLE_SEED).shuffle(items)
    return items


# ---------------------------------------------------------------------------------------------- record


async def _record(args: argparse.Namespace) -> int:
    settings = embedded_settings_on_own_port()
    local = settings.trustgate.local_upstream
    settings.trustgate.local_upstream = local.model_copy(update={"threads": args.threads})
    scoring = settings.trustgate.scoring
    model, bc = _recording_settings(settings)
    items, started, recorded = _items(args), time.monotonic(), 0
    counter = CallCounter()
    args.cache.parent.mkdir(parents=True, exist_ok=True)
    with EvalCache(args.cache) as cache:
        async with contextlib.AsyncExitStack() as stack, open_upstream(settings) as complete:
            endpoint = await stack.enter_async_context(local_sparql_endpoint(scoring))
            # one generator, both seeds' scorers
            cpu = InThreads(CpuParts(distractors=load_generator(scoring, endpoint)))
            scorers = {seed: ConsistencyScorer(bc[seed], cpu) for seed in SEEDS}
            spec = RunSpec(mode="answer", model=model, components=(), verbal_confidence=False, answer_logprobs=False)
            evaluator = Evaluator(spec, complete, cache, {}, scoring)
            for number, item in enumerate(items, 1):
                if time.monotonic() - started > args.budget_s:
                    print(f"budget of {args.budget_s:.0f} s spent; rerun to go on", file=sys.stderr)
                    break
                answer = (await evaluator.evaluate(item)).answer
                job = ScoringJob(id=f"{item.dataset}/{item.id}", model=model, question=item.question, answer=answer)
                for seed, scorer in scorers.items():
                    site, fingerprint = _site(item, seed, model), _fingerprint(bc[seed])
                    if cache.result(site, fingerprint) is not None:
                        continue
                    result = await scorer.score(job, CachedAsk(complete, cache, site, counter))
                    recorded += seed == SEEDS[0]
                    if result.error is None:
                        cache.store_result(site, fingerprint, result)
                print(
                    f"{number}/{len(items)} {time.monotonic() - started:.0f}s calls={counter.made} "
                    f"answer={answer[:50]!r}",
                    file=sys.stderr,
                )
    print(f"recorded {recorded} answers this run ({counter.made} upstream calls, {counter.cached} from the cache)")
    return 0


def _recorded(args: argparse.Namespace) -> tuple[list[Recorded], Counter[str]]:
    """The answers whose both runs are complete, and why each of the others is not there."""
    model, bc = _recording_settings(gateway_settings(None))
    found, missing = [], Counter[str]()
    with EvalCache(args.cache) as cache:
        for item in _items(args):
            results = [cache.result(_site(item, seed, model), _fingerprint(bc[seed])) for seed in SEEDS]
            runs = [observations(result) for result in results if result is not None]
            if len(runs) < len(SEEDS):
                missing["not recorded yet"] += 1
            elif any(run is None for run in runs):
                unscored = next(r for r in results if r is not None and observations(r) is None)
                missing[f"not scored ({unscored.label or unscored.error})"] += 1
            else:
                found.append(Recorded(item.id, tuple(run for run in runs if run is not None)))
    return found, missing


# ---------------------------------------------------------------------------------------------- simulate


def _simulation_settings(seed: int) -> ConsistencySettings:
    return ConsistencySettings(**RECORDING, seed=seed, prompt_examples=0)


async def _simulate_one(answer: SimulatedAnswer) -> Recorded:
    runs = []
    for seed in SEEDS:
        scorer = ConsistencyScorer(
            _simulation_settings(seed), InThreads(CpuParts(distractors=PlaceholderDistractors()))
        )
        job = ScoringJob(id=answer.id, model="scripted", question=answer.question, answer=answer.answer)
        result = await scorer.score(job, ScriptedModel(answer, random.Random(f"{seed}:{answer.id}")))
        run = observations(result)
        assert run is not None, result.error
        runs.append(run)
    return Recorded(answer.id, tuple(runs))


async def _simulate(per_rate: int, biased: bool) -> list[Recorded]:
    return [await _simulate_one(answer) for answer in simulated_answers(per_rate, biased)]


# ---------------------------------------------------------------------------------------------- report


def _table(recorded: Sequence[Recorded], policies: Sequence[Policy]) -> list[Agreement]:
    first, second = [r.runs[0] for r in recorded], [r.runs[1] for r in recorded]
    ceiling = agreement(reference(), first, second)
    return [ceiling, *(agreement(p, first, second) for p in policies)]


def _fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def _describe(recorded: Sequence[Recorded]) -> str:
    """What the recorded runs look like: the reference labels, the consistent share, the log-probabilities."""
    labels = Counter(reference().replay(r.runs[0]).label for r in recorded)
    checks = [o for r in recorded for run in r.runs for o in run]
    return (
        f"{len(recorded)} answers; n=10 labels (seed 1): "
        + ", ".join(f"{name} {labels[name]}" for name in ("inconsistent", "uncertain", "consistent"))
        + f"; consistent checks {sum(o.consistent for o in checks) / len(checks):.3f} of {len(checks)}, "
        f"letter probabilities in {sum(o.probability is not None for o in checks) / len(checks):.3f} of them"
    )


def _markdown(title: str, rows: Sequence[Agreement], recorded: Sequence[Recorded]) -> str:
    lines = [
        f"### {title}",
        "",
        _describe(recorded),
        "",
        "| policy | calls / answer | label agreement | Spearman | label agr. vs independent n=10 | "
        "Spearman vs independent n=10 |",
        "|---|---|---|---|---|---|",
    ]
    for i, row in enumerate(rows):
        name = f"**noise ceiling**: {row.policy} vs itself" if i == 0 else row.policy
        same = ("1 (itself)", "1 (itself)") if i == 0 else (_fmt(row.label_agreement), _fmt(row.spearman))
        lines.append(
            f"| {name} | {row.mean_calls:.2f} | {same[0]} | {same[1]} | "
            f"{_fmt(row.label_agreement_independent)} | {_fmt(row.spearman_independent)} |"
        )
    best = nearest_to_target(rows[1:])
    if best is not None:
        verdict = "meets" if best.meets() else "misses"
        lines += [
            "",
            f"Nearest to the target at ≤ 3 calls (largest min(label agreement / 0.95, Spearman / 0.9)): "
            f"**{best.policy}**, {best.mean_calls:.2f} calls, label agreement {best.label_agreement:.3f}, "
            f"Spearman {_fmt(best.spearman)}: {verdict} the target (≥ 0.95 and ≥ 0.9).",
        ]
    return "\n".join(lines)


def _per_rate(recorded: Sequence[Recorded], rates: dict[str, float], policy: Policy) -> str:
    """Label agreement by known rate: the policy against n=10, and n=10 against its independent run."""
    lines = ["| rate p | noise ceiling (n=10 vs n=10) | " + policy.name + " vs n=10 |", "|---|---|---|"]
    for rate in sorted(set(rates.values())):
        group = [r for r in recorded if rates[r.id] == rate]
        ceiling = agreement(reference(), [r.runs[0] for r in group], [r.runs[1] for r in group])
        cheap = agreement(policy, [r.runs[0] for r in group])
        lines.append(f"| {rate:.1f} | {_fmt(ceiling.label_agreement_independent)} | {_fmt(cheap.label_agreement)} |")
    return "\n".join(lines)


def _report(args: argparse.Namespace) -> int:
    policies, sections, figures = candidates(), [], {}
    real, missing = _recorded(args)
    if real:
        rows = _table(real, policies)
        sections.append(
            _markdown(
                f"Real model: SmolLM2-135M on MixedQA (its own answers), of {args.answers} "
                f"questions asked: {len(real)} with both runs complete",
                rows,
                real,
            )
        )
        figures["real"] = {"rows": [asdict(r) for r in rows], "missing": dict(missing)}
        if missing:
            sections.append("Not in the table: " + ", ".join(f"{n} answers {why}" for why, n in missing.items()))
    for biased in (False, True):
        simulated = asyncio.run(_simulate(args.per_rate, biased))
        rows = _table(simulated, policies)
        kind = "letter-biased (favourite C, weight 0.5)" if biased else "plain"
        sections.append(_markdown(f"Simulation, {kind}: {args.per_rate} answers per rate 0.1..0.9", rows, simulated))
        best = nearest_to_target(rows[1:])
        if best is not None:
            rates = {a.id: a.rate for a in simulated_answers(args.per_rate, biased)}
            chosen = next(p for p in policies if p.name == best.policy)
            sections.append(_per_rate(simulated, rates, chosen))
        figures["simulation-biased" if biased else "simulation"] = {"rows": [asdict(r) for r in rows]}
    data_dir = f" --data-dir {args.data_dir}" if args.data_dir else ""
    print(f"Command: `{COMMAND} report --answers {args.answers} --per-rate {args.per_rate}{data_dir}`\n")
    print("\n\n".join(sections))
    if args.json:
        args.json.write_text(json.dumps(_strict(figures), indent=2, allow_nan=False))
    return 0


def _strict(value: Any) -> Any:
    """NaN (a Spearman of a constant column) as null, so that the file is plain JSON."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {key: _strict(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_strict(item) for item in value]
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evaluation.studies.bc_agreement", description=__doc__.split("\n")[0]
    )
    tasks = parser.add_subparsers(dest="task", required=True)
    record = tasks.add_parser("record", help="record two independent full runs of 10 checks per answer")
    report = tasks.add_parser("report", help="replay the cheap policies on the recorded checks, and simulate")
    for task in (record, report):
        task.add_argument("--answers", type=int, default=200, help="MixedQA questions (a seeded sample)")
        task.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
        task.add_argument("--data-dir", type=Path, help="where mixedqa_human_labels.json is (default: ../shared/eval)")
    record.add_argument("--threads", type=int, default=1, help="llama.cpp threads (the config's default: 1)")
    record.add_argument("--budget-s", type=float, default=780.0, help="stop taking new answers after this long")
    report.add_argument("--per-rate", type=int, default=200, help="simulated answers per consistency rate")
    report.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    return asyncio.run(_record(args)) if args.task == "record" else _report(args)


if __name__ == "__main__":
    sys.exit(main())
