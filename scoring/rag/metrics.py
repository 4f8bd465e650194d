"""Trust-Eval's per-answer metrics from the judge's verdicts. Pure.

Citation recall of a statement: do its citations, read together, entail it
(no citation: 0). Citation precision (ALCE's rule, as Trust-Eval applies it):
every citation of an unsupported statement is imprecise; the one citation of
a supported statement is precise; of several citations of a supported
statement, one is irrelevant when it alone does not entail the statement AND
the others without it still do. Groundedness: whether the documents entail
the statement at all, cited or not. Claim correctness: the share of
reference claims the answer entails.

A verdict of None (the judge failed) makes every metric that needs it None:
an average over the verdicts that happened to succeed would look exact and
be biased.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .entailment import Verdict

__all__ = [
    "StatementCheck",
    "citation_precision",
    "citation_recall",
    "f1",
    "groundedness",
    "mean",
    "share_supported",
    "statement_precision",
    "statement_recall",
]


@dataclass
class StatementCheck:
    """The verdicts on one statement.

    ``cited``: the citations judged; ``joint``: the verdict on them together
    (None when the judge failed; unused without citations); ``alone`` / ``without``:
    per citation, the verdict on it alone and on the others without it
    (precision's checks, asked only for a supported statement with several
    citations); ``grounding``: the verdict of all the documents.
    """

    cited: tuple[int, ...]
    joint: Verdict = None
    alone: dict[int, Verdict] = field(default_factory=dict)
    without: dict[int, Verdict] = field(default_factory=dict)
    grounding: Verdict = None

    def relevant(self, citation: int) -> bool | None:
        """ALCE: is this citation of a supported multi-citation statement needed? None: unknown."""
        alone = self.alone.get(citation)
        if alone is None:
            return None
        if alone == "support":
            return True
        rest = self.without.get(citation)
        return None if rest is None else rest != "support"


def statement_recall(check: StatementCheck) -> float | None:
    if not check.cited:
        return 0.0
    return None if check.joint is None else float(check.joint == "support")


def statement_precision(check: StatementCheck) -> tuple[int, int] | None:
    """(precise citations, judged citations); None when a needed verdict failed."""
    count = len(check.cited)
    if count == 0:
        return 0, 0
    if check.joint is None:
        return None
    if check.joint != "support":
        return 0, count
    if count == 1:
        return 1, 1
    relevant = [check.relevant(c) for c in check.cited]
    return None if None in relevant else (sum(map(bool, relevant)), count)


def mean(values: Iterable[float | None]) -> float | None:
    """The mean, or None when a value is None or there are none."""
    items = list(values)
    if not items or any(v is None for v in items):
        return None
    return sum(v for v in items if v is not None) / len(items)


def citation_recall(checks: Sequence[StatementCheck]) -> float | None:
    return mean(statement_recall(c) for c in checks)


def citation_precision(checks: Sequence[StatementCheck]) -> float | None:
    """Precise over judged citations across the answer; None with no citation or a failed verdict."""
    counts = [statement_precision(c) for c in checks]
    if any(c is None for c in counts):
        return None
    precise, total = (sum(c[i] for c in counts if c is not None) for i in (0, 1))
    return precise / total if total else None


def share_supported(verdicts: Iterable[Verdict]) -> float | None:
    """The share of "support" verdicts (None with none, or with a failed one)."""
    return mean(None if v is None else float(v == "support") for v in verdicts)


def groundedness(checks: Sequence[StatementCheck]) -> float | None:
    return share_supported(c.grounding for c in checks)


def f1(precision: float | None, recall: float | None) -> float | None:
    if precision is None or recall is None:
        return None
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0
