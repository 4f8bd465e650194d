"""How well does evidence agreement (``ev``) tell right answers from wrong, and what would a default Trust_OV with it
reach? Measured on SmolLM2's own answers (docs/eval/evidence-agreement.md). No model is run: the answers come from
earlier ``trustgate eval run`` reports, and ``ev`` needs only the built evidence index.

Run from the repository root (after ``make install``)::

    # 1. per answer: the components an eval run recorded, and ev, computed here (one set at a time)
    .venv/bin/python -m evaluation.studies.evidence_agreement extract --dataset capitals \\
        --results docs/eval/default-combination/capitals-smollm2/results.json \\
        --items docs/eval/default-combination/items-capitals.json --out docs/eval/evidence-agreement/items-capitals.json
    # 2. every component's AUROC, ev's coverage, and the default Trust_OV refitted with ev, cross-validated
    .venv/bin/python -m evaluation.studies.evidence_agreement report \\
        --items docs/eval/evidence-agreement/items-*.json --json docs/eval/evidence-agreement/results.json

``extract`` reads the answers, their labels and, with ``--items``, their component values from an
``evaluation.studies.default_combination extract`` file (else from the run's results.json: Trust_BC's graded value,
Trust_FC, lp and sc as reported), and adds ``ev`` from the gateway's own scorer over the index in ``--data-dir``,
run by the gateway's own pipeline (a long answer claim by claim, as the gateway checks it). An abstaining ``ev`` is
absent (None).

``report`` gives, per set, each component's AUROC of right vs wrong answers (ev on the answers it covers, and with
abstentions read as 0.5), and two default Trust_OVs fitted as ``evaluation.studies.default_combination`` fits the
shipped prior (one logistic model over the components present, an absent one adding nothing; all sets pooled with
its simulated capable model, which has no ev; 5-fold cross-validation stratified by set and label, seed 0):
``prior`` over lp, bc, fc and sc, and ``prior+ev`` over the five. The fit of ``prior+ev`` on every answer is
printed; the shipped prior is written by ``evaluation/studies/default_combination.py`` from the same items.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from evaluation.datasets import load_items
from evaluation.metrics import auroc, bootstrap_ci
from evaluation.studies.default_combination import (
    CAPABLE_ANSWERS,
    SEED,
    Item,
    capable_model,
    cross_validated,
    fit_prior,
    paired_difference,
)
from scoring.assembly import open_scorers
from scoring.pipeline import ScoringPipeline
from scoring.settings import CpuSettings, ScoringSettings
from scoring.types import EVDetails, Reply, ScoringJob

COMPONENTS = ("lp", "bc", "fc", "sc")
WITH_EV = (*COMPONENTS, "ev")
Fitter = Callable[[Sequence[Item]], Callable[[Item], float | None]]


def _values_from_scores(scores: dict[str, Any]) -> dict[str, float | None]:
    return {"lp": scores.get("lp"), "bc": scores.get("bc_graded"), "fc": scores.get("fc"), "sc": scores.get("sc")}


async def _never_asked(messages: list[dict[str, Any]], **params: Any) -> Reply:
    raise AssertionError("the evidence agreement check made an upstream call")


async def _agreements(data_dir: Path, cases: Sequence[tuple[str, str]]) -> list[tuple[float | None, str | None]]:
    """ev's value and reason for each (question, answer), as the gateway's pipeline gives them (in this process): a
    long answer checked claim by claim (its lowest claim that did not abstain), a short one whole."""
    settings = ScoringSettings(data_dir=data_dir, cpu=CpuSettings(processes=0))
    async with contextlib.AsyncExitStack() as stack:
        scorers = await open_scorers(settings, stack, components=["ev"], missing_evidence="raise")
        pipeline = ScoringPipeline(list(scorers.values()), lambda model, purpose, lane: _never_asked, settings)
        found = []
        for n, (question, answer) in enumerate(cases):
            record = await pipeline.run(ScoringJob(id=f"ev-{n}", model="study", question=question, answer=answer))
            result = record.components["ev"]
            reason = result.details.reason if isinstance(result.details, EVDetails) else result.label
            found.append((result.value, reason))
        return found


def extract(args: argparse.Namespace) -> None:
    dataset, results, items, data_dir, out = args.dataset, args.results, args.items, args.data_dir, args.out
    set_name = args.set or dataset
    run = json.loads(results.read_text(encoding="utf-8"))
    questions = {item.id: item.question for item in load_items(dataset, "answer", data_dir=args.sets_dir)}
    recorded = {row["id"]: row for row in json.loads(items.read_text(encoding="utf-8"))} if items else {}
    entries = run["items"]
    agreements = asyncio.run(_agreements(data_dir, [(questions[e["id"]], e["answer"]) for e in entries]))
    rows = []
    for entry, (ev, reason) in zip(entries, agreements, strict=True):
        known = recorded.get(entry["id"], {})
        values = dict(known["values"]) if known else _values_from_scores(entry["scores"])
        values["ev"] = ev
        words = len(entry["answer"].split())
        item = Item(set_name, entry["id"], int(entry["label"]), words, values, known.get("table3"), known.get("paper"))
        rows.append({**asdict(item), "question": questions[entry["id"]], "answer": entry["answer"], "ev": reason})
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    covered = sum(1 for row in rows if row["values"]["ev"] is not None)
    print(f"{len(rows)} items of {dataset} -> {out} (ev covers {covered})")


def planted(args: argparse.Namespace) -> None:
    """ev on every question of a built set, answered once with its gold answer and once with the gold answer of
    the next question of the same kind ("Canberra." / "Nairobi."): what it does beyond one model's answers."""
    items = load_items(args.dataset, "answer")
    groups: dict[str | None, list[Any]] = {}
    for item in items:
        groups.setdefault(item.group, []).append(item)
    cases, labels = [], []
    for members in groups.values():
        for k, item in enumerate(members):
            other = members[(k + 1) % len(members)]
            cases += [(item.question, f"{item.gold[0]}."), (item.question, f"{other.gold[0]}.")]
            labels += [1, 0]
    found = asyncio.run(_agreements(args.data_dir, cases))
    values = [value for value, _ in found]
    covered = [(v, y) for v, y in zip(values, labels, strict=True) if v is not None]
    wrong_verdicts = sum(1 for v, y in covered if (v > 0.5) != bool(y))
    summary = {
        "dataset": args.dataset,
        "questions": len(items),
        "answers": len(cases),
        "covered": len(covered),
        "covered, right answers": sum(1 for v, y in covered if y),
        "covered, wrong answers": sum(1 for v, y in covered if not y),
        "wrong verdicts": wrong_verdicts,
        "auroc covered": auroc([v for v, _ in covered], [y for _, y in covered]) if covered else None,
        "auroc, abstaining as 0.5": auroc([0.5 if v is None else v for v in values], labels),
    }
    print(json.dumps(summary, indent=1))
    if args.json is not None:
        args.json.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")


def _prior_fitter(names: Sequence[str]) -> Fitter:
    def fit(train: Sequence[Item]) -> Callable[[Item], float | None]:
        prior = fit_prior(train, names)
        return lambda item: prior.probability({n: v for n in names if (v := item.values.get(n)) is not None})

    return fit


def _auroc(scores: Sequence[float | None], items: Sequence[Item]) -> dict[str, Any]:
    pairs = [(s, i.label) for s, i in zip(scores, items, strict=True) if s is not None]
    x, y = [s for s, _ in pairs], [label for _, label in pairs]
    if len(set(y)) < 2:
        return {"n": len(y), "correct": sum(y), "auroc": None, "ci": None}
    interval = bootstrap_ci(auroc, x, y, resamples=1000, seed=SEED)
    return {"n": len(y), "correct": sum(y), "auroc": auroc(x, y), "ci": [interval.low, interval.high]}


def _load(paths: Sequence[Path]) -> list[Item]:
    fields = set(Item.__dataclass_fields__)
    items = [Item(**{k: v for k, v in row.items() if k in fields}) for p in paths for row in json.loads(p.read_text())]
    for item in capable_model(CAPABLE_ANSWERS, SEED):
        item.values["ev"] = None  # a simulation of components: no evidence to read
        items.append(item)
    return items


def report(paths: Sequence[Path], out: Path | None) -> None:
    items = _load(paths)
    candidates: dict[str, list[float | None]] = {
        name: [i.values.get(name) for i in items] for name in (*COMPONENTS, "ev")
    }
    candidates["ev, abstaining as 0.5"] = [0.5 if (v := i.values.get("ev")) is None else v for i in items]
    candidates["prior (lp, bc, fc, sc)"] = cross_validated(items, _prior_fitter(COMPONENTS))
    candidates["prior+ev"] = cross_validated(items, _prior_fitter(WITH_EV))
    tables: dict[str, dict[str, Any]] = {}
    for set_name in dict.fromkeys(i.set for i in items):
        members = [k for k, i in enumerate(items) if i.set == set_name]
        subset = [items[k] for k in members]
        rows = {name: _auroc([scores[k] for k in members], subset) for name, scores in candidates.items()}
        pick = {name: [candidates[name][k] for k in members] for name in ("prior+ev", "prior (lp, bc, fc, sc)", "lp")}
        tables[set_name] = {
            "answers": len(subset),
            "right": sum(i.label for i in subset),
            "ev coverage": sum(1 for i in subset if i.values.get("ev") is not None) / len(subset),
            "auroc": rows,
            "prior+ev - lp": paired_difference(pick["prior+ev"], pick["lp"], subset),
            "prior+ev - prior": paired_difference(pick["prior+ev"], pick["prior (lp, bc, fc, sc)"], subset),
        }
    refit = fit_prior(items, WITH_EV)
    for set_name, table in tables.items():
        print(
            f"\n## {set_name}: {table['answers']} answers, {table['right']} right, ev covers {table['ev coverage']:.0%}"
        )
        print("\n| score | n | right | AUROC [95% CI] |\n|---|---|---|---|")
        for name, row in table["auroc"].items():
            ci = f" [{row['ci'][0]:.3f}, {row['ci'][1]:.3f}]" if row["ci"] else ""
            print(f"| {name} | {row['n']} | {row['correct']} | " + (f"{row['auroc']:.3f}{ci}" if row["auroc"] else "–"))
        for pair in ("prior+ev - lp", "prior+ev - prior"):
            d = table[pair]
            print(f"\n{pair}: " + (f"{d['difference']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]" if d else "–"))
    print(f"\nproposed prior (prior+ev fitted on all {len(items)} answers): {json.dumps(refit.to_json())}")
    if out is not None:
        out.write_text(json.dumps({"tables": tables, "proposed_prior": refit.to_json()}, indent=1) + "\n")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m evaluation.studies.evidence_agreement", description=__doc__.split("\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    ex = commands.add_parser("extract", help="ev and the recorded components of one eval run's answers")
    ex.add_argument("--dataset", required=True, help="the run's dataset (its questions are read from it)")
    ex.add_argument("--results", type=Path, required=True, help="the run's results.json")
    ex.add_argument("--items", type=Path, help="evaluation.studies.default_combination's items of the same run")
    ex.add_argument("--data-dir", type=Path, default=ScoringSettings().data_dir, help="the built scoring assets")
    ex.add_argument("--set", help="the set's name in the report (default: the dataset)")
    ex.add_argument("--sets-dir", type=Path, help="the labeled sets' folder, as `trustgate eval run --data-dir`")
    ex.add_argument("--out", type=Path, required=True)
    plant = commands.add_parser("planted", help="ev on a built set's gold answers and on wrong ones of the same kind")
    plant.add_argument("--dataset", required=True, choices=["capitals", "shortfacts"])
    plant.add_argument("--data-dir", type=Path, default=ScoringSettings().data_dir, help="the built scoring assets")
    plant.add_argument("--json", type=Path)
    rep = commands.add_parser("report", help="every component and the refitted default on every set")
    rep.add_argument("--items", type=Path, nargs="+", required=True)
    rep.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.command == "extract":
        extract(args)
    elif args.command == "planted":
        planted(args)
    else:
        report(args.items, args.json)


if __name__ == "__main__":
    main()
