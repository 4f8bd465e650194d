"""Which Trust_OV should be the default? Candidates measured on SmolLM2's labeled sets and a simulated capable model.

Run from the repository root (after ``make install``); docs/eval/default-combination.md has the whole recipe::

    # 1. per-answer component values of a `trustgate eval run` (its cache and its results.json), once per set
    .venv/bin/python -m evaluation.studies.default_combination extract --cache CACHE --results RUN/results.json \\
        --set capitals --out docs/eval/default-combination/items-capitals.json
    # 1b. ev beside them (evaluation.studies.evidence_agreement extract; docs/eval/evidence-agreement.md)
    # 2. every candidate on every set; --write-prior writes the shipped prior (from the committed items: no model)
    .venv/bin/python -m evaluation.studies.default_combination report \\
        --items docs/eval/evidence-agreement/items-capitals.json docs/eval/evidence-agreement/items-mixedqa.json \\
        docs/eval/evidence-agreement/items-shortfacts.json \\
        --json docs/eval/default-combination/results.json --write-prior scoring/default_combination.json

Candidates (each a score per answer, AUROC of right vs wrong answers):

* ``table3``: the paper's Table 3 cell of Trust_BC's binary verdict and the judge's label;
* ``paper``: graded Table 3, ``combine: paper`` (``scoring.combine.paper_trust``);
* ``mean``: the mean of the present components' calibrated probabilities (each of lp, bc, fc, sc, ev mapped to
  P(correct) by its own logistic fit);
* ``prior``: one logistic model over the present components' values (lp, bc, fc, sc and evidence agreement
  ev), an absent one adding nothing (``scoring.combine.PriorCombination``); ``prior-no-sc`` and ``prior-no-ev``,
  the same without sc or without ev; ``prior, ev withheld``, the prior with ev scoring every answer as if ev
  had abstained on it (how it degrades where the evidence is silent);
* the single components and the answer's length (shorter = trusted), as yardsticks.

``mean`` and ``prior`` are fitted on all sets pooled; the figures give each answer the score of a fit that
did not see it (5-fold, stratified by set and label, seed 0). The prior written by ``--write-prior`` is the fit
on every answer.

The capable model is simulated at the component level (``capable_model``): its answers are right 60 % of
the time; each answer has a consistency rate (Beta(8, 2) when right, Beta(2, 3) when wrong) that drives its
Trust_BC checks (5, each consistent with that probability) and its sc samples (3, each agreeing with that
probability); its judge says support / neutral / contradict with probabilities 0.7 / 0.2 / 0.1 when right
and 0.15 / 0.35 / 0.5 when wrong, with graded label probabilities; its mean token probability is
Beta(12, 1.5) whatever the answer: confident and fluent, right or wrong. It has no ev: ev reads a corpus,
not a model, and its verdicts are measured on real questions (docs/eval/evidence-agreement.md). The components
are the gateway's own result types and Trust_OV the gateway's own functions of them.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sqlite3
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold

from evaluation.metrics import auroc, bootstrap_ci, expected_calibration_error
from scoring.combine import PriorCombination, combine, default_trust
from scoring.factcheck.judge import label_value
from scoring.types import BCDetails, ComponentResult, FactLabel, FCDetails, LPDetails, OVDetails, SCDetails

COMPONENTS = ("lp", "bc", "fc", "sc", "ev")
WITHOUT_EV = ("lp", "bc", "fc", "sc")
FOLDS, SEED, C = 5, 0, 1.0
CAPABLE_ANSWERS = 200
WIDE_LP = (3.0, 1.5)  # mean 0.67, sd 0.2: the sensitivity check's token probabilities
JUDGE_LABELS: tuple[FactLabel, ...] = ("support", "neutral", "contradict")  # in the order the simulation draws them


@dataclass
class Item:
    """One labeled answer: its components' values (None: absent), Table 3 of its bc and fc, its length."""

    set: str
    id: str
    label: int
    words: int
    values: dict[str, float | None]
    table3: float | None
    paper: float | None
    # The simulated capable model's Trust_BC checks in the order asked (consistent or not); None for a real run
    bc_checks: list[bool] | None = None


def _item(set_name: str, item_id: str, label: int, answer: str, components: dict[str, ComponentResult]) -> Item:
    ov = combine(components.get("bc"), components.get("fc"))
    both = isinstance(ov.details, OVDetails) and ov.details.source == "bc+fc"
    values = {
        name: (c.value if (c := components.get(name)) is not None and c.error is None else None) for name in COMPONENTS
    }
    table3 = getattr(ov.details, "table3", None) if both else None
    return Item(set_name, item_id, label, len(answer.split()), values, table3, ov.value if both else None)


def _item_from_scores(set_name: str, entry: dict[str, Any]) -> Item:
    """An item of a run whose cache is gone, from its results.json scores: Trust_BC's value is its graded share
    (the paper procedure's value), lp is exp(mean log-probability) of the answer's tokens (what the lp scorer
    computes from the same tokens), and sc is absent."""
    scores = entry["scores"]
    mean_logprob = scores.get("mean_logprob")
    values = {
        "bc": scores.get("bc_graded"),
        "fc": scores.get("fc"),
        "lp": math.exp(mean_logprob) if mean_logprob is not None else None,
        "sc": None,
        "ev": None,
    }
    return Item(
        set_name,
        entry["id"],
        int(entry["label"]),
        len(entry["answer"].split()),
        values,
        scores.get("ov_table3"),
        scores.get("ov_graded"),
    )


def extract(cache: Path | None, results: Path, set_name: str, out: Path) -> None:
    """The component values of every item of a run's results.json, read from the run's cache (without one: from
    the scores in results.json)."""
    run = json.loads(results.read_text(encoding="utf-8"))
    dataset = run["context"].get("dataset", set_name)
    db = sqlite3.connect(f"file:{cache}?mode=ro", uri=True) if cache is not None else None
    items = []
    for entry in run["items"]:
        if db is None:
            items.append(_item_from_scores(set_name, entry))
            continue
        rows = db.execute(
            "SELECT component, result FROM results WHERE dataset=? AND item_id=?", (dataset, entry["id"])
        ).fetchall()
        components = {name: ComponentResult.model_validate_json(blob) for name, blob in rows if name in COMPONENTS}
        if "answer" in {name for name, _ in rows}:
            items.append(_item(set_name, entry["id"], int(entry["label"]), entry["answer"], components))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps([asdict(i) for i in items], indent=1) + "\n", encoding="utf-8")
    print(f"{len(items)} items of {dataset} -> {out}")


def capable_model(
    answers: int, seed: int, lp_shape: tuple[float, float] = (12, 1.5), name: str = "capable"
) -> list[Item]:
    """The simulated capable model's answers (see the module docstring); ``lp_shape``: its token probability's
    Beta distribution, whatever the answer."""
    rng = random.Random(seed)
    items = []
    for n in range(answers):
        right = rng.random() < 0.6
        rate = rng.betavariate(8, 2) if right else rng.betavariate(2, 3)
        checks = [rng.random() < rate for _ in range(5)]
        graded = sum(checks) / len(checks)
        bc = ComponentResult(
            component="bc",
            value=graded,
            label=None,
            details=BCDetails(
                mode="graded", binary=float(all(checks)), graded=graded, checks_run=len(checks), procedure="paper"
            ),
        )
        weights = (0.7, 0.2, 0.1) if right else (0.15, 0.35, 0.5)
        label = rng.choices(JUDGE_LABELS, weights)[0]
        top = rng.betavariate(6, 2)
        probs = {name: top if name == label else (1 - top) / 2 for name in JUDGE_LABELS}
        fc = ComponentResult(
            component="fc",
            value=label_value(label, probs),
            label=label,
            details=FCDetails(label=label, label_probs=probs),
        )
        token_probability = rng.betavariate(*lp_shape)
        lp = ComponentResult(
            component="lp", value=token_probability, details=LPDetails(mean_probability=token_probability, tokens=12)
        )
        agreeing = sum(rng.random() < rate for _ in range(3))
        sc = ComponentResult(component="sc", value=agreeing / 3, details=SCDetails(samples_asked=3, samples_answered=3))
        words = rng.randint(4, 20)
        item = _item(name, f"sim-{n}", int(right), " ".join(["w"] * words), {"bc": bc, "fc": fc, "lp": lp, "sc": sc})
        item.bc_checks = checks
        items.append(item)
    return items


def _centred(items: Sequence[Item], names: Sequence[str], centres: dict[str, float]) -> np.ndarray:
    """Each item's values less the centres, an absent value 0 (it adds nothing)."""
    return np.array([[(v - centres[n]) if (v := i.values[n]) is not None else 0.0 for n in names] for i in items])


def fit_prior(items: Sequence[Item], names: Sequence[str]) -> PriorCombination:
    """The prior: a logistic regression on centred values (absent ones 0), L2 with C=1."""
    present = [n for n in names if any(i.values[n] is not None for i in items)]
    centres = {n: float(np.mean([v for i in items if (v := i.values[n]) is not None])) for n in present}
    model = LogisticRegression(C=C, max_iter=1000).fit(_centred(items, present, centres), [i.label for i in items])
    return PriorCombination(
        float(model.intercept_[0]), dict(zip(present, map(float, model.coef_[0]), strict=True)), centres
    )


def _prior_scores(fit: PriorCombination, items: Sequence[Item]) -> list[float | None]:
    """The prior's score of each item; None where it has no component the prior reads (the gateway gives none)."""
    comps = [{n: ComponentResult(component=n, value=v) for n, v in i.values.items() if v is not None} for i in items]
    return [default_trust(c, fit).value for c in comps]


def fit_mean(items: Sequence[Item]) -> Callable[[Item], float | None]:
    """Each component's own logistic calibration; an item's score the mean over its present components."""
    maps = {}
    for name in COMPONENTS:
        rows = [(v, i.label) for i in items if (v := i.values[name]) is not None]
        if len({y for _, y in rows}) == 2:
            maps[name] = LogisticRegression(C=C).fit([[v] for v, _ in rows], [y for _, y in rows])

    def score(item: Item) -> float | None:
        probs = [float(m.predict_proba([[v]])[0, 1]) for n, m in maps.items() if (v := item.values[n]) is not None]
        return sum(probs) / len(probs) if probs else None

    return score


def cross_validated(
    items: Sequence[Item], fit: Callable[[Sequence[Item]], Callable[[Item], float | None]]
) -> list[float | None]:
    """Each item's score from a fit on the folds without it (stratified by set and label)."""
    strata = [f"{i.set}/{i.label}" for i in items]
    scores: list[float | None] = [None] * len(items)
    for train, held in StratifiedKFold(FOLDS, shuffle=True, random_state=SEED).split(np.zeros(len(items)), strata):
        scorer = fit([items[k] for k in train])
        for k in held:
            scores[k] = scorer(items[k])
    return scores


def _prior_fitter(
    names: Sequence[str], withheld: Sequence[str] = ()
) -> Callable[[Sequence[Item]], Callable[[Item], float | None]]:
    """A prior over ``names``, scoring each item with the ``withheld`` components absent (as if they abstained)."""

    def fit(train: Sequence[Item]) -> Callable[[Item], float | None]:
        prior = fit_prior(train, names)
        return lambda item: _prior_scores(prior, [_without(item, withheld)])[0]

    return fit


def _without(item: Item, names: Sequence[str]) -> Item:
    return replace(item, values={n: None if n in names else v for n, v in item.values.items()})


def _row(name: str, scores: Sequence[float | None], items: Sequence[Item], probability: bool) -> dict[str, Any]:
    pairs = [(s, i.label) for s, i in zip(scores, items, strict=True) if s is not None]
    x, y = [s for s, _ in pairs], [label for _, label in pairs]
    if len(set(y)) < 2:
        return {"score": name, "n": len(y), "correct": sum(y), "auroc": None, "ci": None, "ece": None}
    interval = bootstrap_ci(auroc, x, y, resamples=1000, seed=SEED)
    return {
        "score": name,
        "n": len(y),
        "correct": sum(y),
        "auroc": auroc(x, y),
        "ci": [interval.low, interval.high],
        "ece": expected_calibration_error(x, y) if probability else None,
    }


def paired_difference(
    a: Sequence[float | None], b: Sequence[float | None], items: Sequence[Item], resamples: int = 1000
) -> dict[str, float] | None:
    """AUROC(a) − AUROC(b) on the items both score, with a 95 % interval from paired bootstrap resamples."""
    rows = [(x, z, i.label) for x, z, i in zip(a, b, items, strict=True) if x is not None and z is not None]
    if len({y for _, _, y in rows}) < 2:
        return None
    xs, zs, ys = (np.array(column, dtype=float) for column in zip(*rows, strict=True))
    rng, diffs = np.random.default_rng(SEED), []
    for pick in rng.integers(0, len(ys), (resamples, len(ys))):
        if 0 < ys[pick].sum() < len(pick):
            diffs.append(auroc(xs[pick], ys[pick]) - auroc(zs[pick], ys[pick]))
    low, high = np.percentile(diffs, [2.5, 97.5])
    return {"difference": auroc(xs, ys) - auroc(zs, ys), "low": float(low), "high": float(high)}


COMPARED = (
    ("prior", "paper"),
    ("prior", "table3"),
    ("prior", "prior-no-sc"),
    ("prior", "prior-no-ev"),
    ("prior, ev withheld", "prior-no-ev"),
    ("prior, ev withheld", "lp"),
    ("prior-no-sc", "paper"),
    ("mean", "paper"),
    ("mean", "prior"),
    ("prior", "lp"),
)


def load_items(paths: Sequence[Path]) -> list[Item]:
    """The items of ``extract`` files (and of the evidence-agreement study's, whose rows say more: their question,
    answer and ev's reason); a component a file does not know is absent."""
    fields = set(Item.__dataclass_fields__)
    items = []
    for path in paths:
        for row in json.loads(path.read_text(encoding="utf-8")):
            item = Item(**{key: value for key, value in row.items() if key in fields})
            item.values = {name: item.values.get(name) for name in COMPONENTS}
            items.append(item)
    return items


BORROWED_CHECKS = ("bc", "fc", "sc")
BORROWED_DRAWS = 200


def borrowed_checks(items: Sequence[Item], prior: PriorCombination) -> dict[str, dict[str, Any]]:
    """Sensitivity, not in any fit: each set recorded without Trust_BC, Trust_FC and sc (shortfacts: lp and ev only)
    with those three drawn, per answer, from a real answer of the same label of a set that has them (capitals, the
    same model's), ``BORROWED_DRAWS`` times: what the shipped prior does there once the calls the gateway would make
    add their noise, against ``lp``."""

    def full(item: Item) -> bool:
        return all(item.values[name] is not None for name in BORROWED_CHECKS) and item.values["lp"] is not None

    donors = [i for i in items if full(i) and i.set != "capable"]
    lacking = sorted({i.set for i in items if all(i.values[n] is None for n in BORROWED_CHECKS)})
    found: dict[str, dict[str, Any]] = {}
    for set_name in lacking:
        members = [i for i in items if i.set == set_name and i.values["lp"] is not None]
        pools = {y: [d for d in donors if d.label == y] for y in (0, 1)}
        if not members or not all(pools.values()):
            continue
        labels = [i.label for i in members]
        rng = random.Random(SEED)
        areas = []
        for _ in range(BORROWED_DRAWS):
            drawn = [
                replace(i, values={**i.values, **{n: rng.choice(pools[i.label]).values[n] for n in BORROWED_CHECKS}})
                for i in members
            ]
            areas.append(auroc([s or 0.0 for s in _prior_scores(prior, drawn)], labels))
        lp = auroc([float(i.values["lp"] or 0.0) for i in members], labels)
        low, high = np.percentile(areas, [2.5, 97.5])
        found[set_name] = {
            "from": "+".join(sorted({d.set for d in donors})),
            "draws": BORROWED_DRAWS,
            "prior": float(np.mean(areas)),
            "low": float(low),
            "high": float(high),
            "lp": lp,
            "prior below lp": float(np.mean([area < lp for area in areas])),
        }
    return found


def report(paths: Sequence[Path], out: Path | None, prior_out: Path | None) -> None:
    items = load_items(paths)
    items += capable_model(CAPABLE_ANSWERS, SEED)
    candidates: dict[str, tuple[Sequence[float | None], bool]] = {
        "table3": ([i.table3 for i in items], True),
        "paper": ([i.paper for i in items], True),
        "mean": (cross_validated(items, fit_mean), True),
        "prior": (cross_validated(items, _prior_fitter(COMPONENTS)), True),
        "prior-no-sc": (cross_validated(items, _prior_fitter(("lp", "bc", "fc", "ev"))), True),
        "prior-no-ev": (cross_validated(items, _prior_fitter(WITHOUT_EV)), True),
        "prior, ev withheld": (cross_validated(items, _prior_fitter(COMPONENTS, ("ev",))), True),
    }
    candidates.update({name: ([i.values[name] for i in items], name == "lp") for name in COMPONENTS})
    candidates["shorter"] = ([-float(i.words) for i in items], False)
    shipped = fit_prior(items, COMPONENTS)
    candidates["prior (shipped fit, in-sample)"] = (_prior_scores(shipped, items), True)
    tables = {}
    for set_name in dict.fromkeys(i.set for i in items):
        members = [k for k, i in enumerate(items) if i.set == set_name]
        subset = [items[k] for k in members]
        tables[set_name] = [
            _row(name, [scores[k] for k in members], subset, probability)
            for name, (scores, probability) in candidates.items()
        ]
    differences = {}
    for set_name in tables:
        members = [k for k, i in enumerate(items) if i.set == set_name]
        subset = [items[k] for k in members]
        differences[set_name] = {
            f"{a} - {b}": paired_difference(
                [candidates[a][0][k] for k in members], [candidates[b][0][k] for k in members], subset
            )
            for a, b in COMPARED
        }
    # Sensitivity, not in any fit: a capable model whose token probabilities spread widely and still say nothing.
    wide = capable_model(CAPABLE_ANSWERS, SEED + 1, WIDE_LP, "capable, wide lp (not fitted on)")
    tables[wide[0].set] = [
        _row("table3", [i.table3 for i in wide], wide, True),
        _row("paper", [i.paper for i in wide], wide, True),
        _row("prior (shipped fit)", _prior_scores(shipped, wide), wide, True),
        *(_row(name, [i.values[name] for i in wide], wide, name == "lp") for name in COMPONENTS),
    ]
    borrowed = borrowed_checks(items, shipped)
    for set_name, rows in tables.items():
        print(f"\n## {set_name}\n\n| score | n | correct | AUROC [95% CI] | ECE |\n|---|---|---|---|---|")
        for r in rows:
            ci = f" [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]" if r["ci"] else ""
            auc = f"{r['auroc']:.3f}{ci}" if r["auroc"] is not None else "–"
            ece = f"{r['ece']:.3f}" if r["ece"] is not None else "–"
            print(f"| {r['score']} | {r['n']} | {r['correct']} | {auc} | {ece} |")
    for set_name, found in differences.items():
        print(f"\n{set_name}: AUROC differences, paired bootstrap 95% interval")
        for pair, d in found.items():
            print(f"  {pair}: " + (f"{d['difference']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]" if d else "–"))
    for set_name, found in borrowed.items():
        print(
            f"\n{set_name}, {', '.join(BORROWED_CHECKS)} drawn from {found['from']} answers of the same label "
            f"({found['draws']} draws): prior {found['prior']:.3f} [{found['low']:.3f}, {found['high']:.3f}], "
            f"lp {found['lp']:.3f}; prior below lp in {found['prior below lp']:.0%} of draws"
        )
    print(f"\nshipped prior (all {len(items)} answers): {json.dumps(shipped.to_json())}")
    if out is not None:
        summary = {
            "tables": tables,
            "differences": differences,
            "borrowed checks": borrowed,
            "prior": shipped.to_json(),
        }
        out.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    if prior_out is not None:
        sets = {i.set: sum(1 for j in items if j.set == i.set) for i in items}
        fitted_on = {
            "sets": sets,
            "folds": FOLDS,
            "C": C,
            "by": "evaluation/studies/default_combination.py (docs/eval/default-combination.md)",
        }
        prior_out.write_text(
            json.dumps({"prior": shipped.to_json(), "fitted_on": fitted_on}, indent=1) + "\n", encoding="utf-8"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evaluation.studies.default_combination", description=__doc__.split("\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    ex = commands.add_parser("extract", help="component values of one eval run's items")
    ex.add_argument("--cache", type=Path, help="the run's eval cache (default: read results.json's scores)")
    ex.add_argument("--results", type=Path, required=True)
    ex.add_argument("--set", required=True)
    ex.add_argument("--out", type=Path, required=True)
    rep = commands.add_parser("report", help="every candidate on every set")
    rep.add_argument("--items", type=Path, nargs="+", default=[])
    rep.add_argument("--json", type=Path)
    rep.add_argument("--write-prior", type=Path)
    args = parser.parse_args(argv)
    if args.command == "extract":
        extract(args.cache, args.results, args.set, args.out)
    else:
        report(args.items, args.json, args.write_prior)
    return 0


if __name__ == "__main__":
    sys.exit(main())
