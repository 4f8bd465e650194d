"""Skipping ``sc`` on a clearly consistent answer: what it costs the shipped default Trust_OV.

The rule (``scoring.sc.skip_when_consistent``): when Trust_BC ended on its first 3 checks, all of them
choosing the answer's own option, ``sc`` asks no samples. This measures the shipped prior
(``scoring/default_combination.json``) three ways on the same answers: ``sc`` always sampled; a skipped
``sc`` absent (it adds nothing); a skipped ``sc`` read as full agreement (1.0). No model is called::

    .venv/bin/python -m evaluation.studies.sc_skip --items docs/eval/default-combination/items-capitals.json

* **capitals**: SmolLM2's recorded answers (``default_combination extract``). They were scored with
  3 graded checks (``preset: cheap``), the same first 3 checks the default rule asks, so an answer is skipped
  when its Trust_BC is 1.0; its values are as recorded.
* **capable** / **capable, wide lp**: ``default_combination.capable_model``'s draws (seed 0 and 1, as
  there), and a larger draw for stable figures. Trust_BC takes the value the default stopping rule gives
  (the share of the first 3 checks when they agree, else of the first 4): what the gateway reports.

Calls per answer count the scoring calls (Trust_BC's checks, the judge's 1, ``sc``'s 3; ``lp`` makes none);
on capitals Trust_BC's count is the recorded 3.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from evaluation.metrics import auroc
from scoring.combine import default_prior

from .default_combination import CAPABLE_ANSWERS, SEED, WIDE_LP, Item, capable_model, paired_difference

SC_SAMPLES, FIRST_CHECKS, LARGE_ANSWERS = 3, 3, 5000
VARIANTS = ("always", "absent", "agree")  # sc always sampled; skipped sc absent; skipped sc read as 1.0


def skipped(item: Item) -> bool:
    """Trust_BC's first 3 checks all chose the answer's own option (recorded runs: 3 checks, value 1.0)."""
    if item.bc_checks is not None:
        return all(item.bc_checks[:FIRST_CHECKS])
    return item.values.get("bc") == 1.0


def with_default_rule(item: Item) -> Item:
    """A simulated item whose Trust_BC is what the default rule reports: 3 checks when they agree, else 4."""
    if item.bc_checks is None:
        return item
    first = item.bc_checks[:FIRST_CHECKS]
    asked = first if len(set(first)) == 1 else item.bc_checks[: FIRST_CHECKS + 1]
    return dataclasses.replace(item, values={**item.values, "bc": sum(asked) / len(asked)})


def bc_calls(item: Item) -> int:
    if item.bc_checks is None:
        return FIRST_CHECKS
    return FIRST_CHECKS if len(set(item.bc_checks[:FIRST_CHECKS])) == 1 else FIRST_CHECKS + 1


def scores(items: Sequence[Item], variant: str) -> list[float]:
    """The shipped prior's Trust_OV of each item under ``variant``."""
    prior = default_prior()
    out = []
    for item in items:
        values = {name: value for name, value in item.values.items() if value is not None}
        if variant != "always" and skipped(item) and "sc" in values:
            if variant == "absent":
                del values["sc"]
            else:
                values["sc"] = 1.0
        out.append(prior.probability(values))
    return out


@dataclass
class Figures:
    """One set's figures: how many answers the rule spares, the calls, the shipped prior's AUROC each way."""

    set: str
    answers: int
    right: int
    skipped: int
    skipped_right: int
    calls_always: float  # scoring calls per answer when sc samples every answer
    calls_skip: float
    auroc: dict[str, float]  # by variant
    difference: dict[str, dict[str, float] | None]  # each skip variant's AUROC less "always", paired bootstrap

    def row(self) -> str:
        cells = [
            f"{self.auroc[v]:.3f} ({d['difference']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}])"
            if (d := self.difference[v])
            else f"{self.auroc[v]:.3f}"
            for v in VARIANTS[1:]
        ]
        return (
            f"| {self.set} | {self.answers} ({self.right}) | {self.skipped} ({self.skipped_right}), "
            f"{self.skipped / self.answers:.0%} | {self.calls_always:.2f} -> {self.calls_skip:.2f} | "
            f"{self.auroc['always']:.3f} | {cells[0]} | {cells[1]} |"
        )


def measure(name: str, items: Sequence[Item]) -> Figures:
    items = [with_default_rule(i) for i in items]
    labels = [i.label for i in items]
    found = {variant: scores(items, variant) for variant in VARIANTS}
    spared = [i for i in items if skipped(i)]
    calls = sum(bc_calls(i) + 1 + SC_SAMPLES for i in items) / len(items)
    return Figures(
        name,
        len(items),
        sum(labels),
        len(spared),
        sum(i.label for i in spared),
        calls,
        calls - SC_SAMPLES * len(spared) / len(items),
        {variant: auroc(found[variant], labels) for variant in VARIANTS},
        {variant: paired_difference(found[variant], found["always"], items) for variant in VARIANTS[1:]},
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evaluation.studies.sc_skip", description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=Path, nargs="+", default=[], help="recorded items (extract's output)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    sets: dict[str, list[Item]] = {}
    for path in args.items:
        for row in json.loads(path.read_text(encoding="utf-8")):
            sets.setdefault(row["set"], []).append(Item(**row))
    sets["capable"] = capable_model(CAPABLE_ANSWERS, SEED)
    sets["capable, wide lp"] = capable_model(CAPABLE_ANSWERS, SEED + 1, WIDE_LP)
    sets[f"capable, {LARGE_ANSWERS} answers"] = capable_model(LARGE_ANSWERS, SEED + 2)
    results = [measure(name, items) for name, items in sets.items()]
    print(
        "| set | answers (right) | sc skipped (right) | calls/answer | AUROC always | skipped absent | "
        "skipped = 1.0 |\n|---|---|---|---|---|---|---|"
    )
    for figures in results:
        print(figures.row())
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(f) for f in results], indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
