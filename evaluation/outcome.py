"""One evaluated item, and the scores read off it. Pure data and pure functions.

An ``ItemOutcome`` keeps every component result as the scorers returned it
(details included), plus the correctness label and where it came from. The
metrics never look at component internals directly: each ``Signal`` says how
to read one number off an outcome, whether that number claims to be a
probability (then calibration error and the reliability diagram apply), and
which row of the paper's Table 1 it corresponds to.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel, Field, ValidationError

from scoring import BCDetails, ComponentResult, LPDetails, OVDetails

D = TypeVar("D", bound=BaseModel)

REPLY_CHARS_KEPT = 1000  # of the answer step's raw reply, for a reader checking how it was cleaned

__all__ = ["REPLY_CHARS_KEPT", "SIGNALS", "AnswerDetails", "ItemOutcome", "Signal", "by_answerer", "signal_values"]


class AnswerDetails(BaseModel):
    """The answer step's details (``runner``): the model's answer to the item and its token log-probabilities.

    ``ComponentResult`` types only the gateway's components, so these travel
    in the result (and the evaluation cache) as a plain JSON object; the
    answer step writes them through this model and every reader reads them
    through it, never by key.
    """

    answer: str = ""  # the reply cleaned to the answer that is scored
    reply: str = ""  # the raw reply, cut at REPLY_CHARS_KEPT characters
    tokens: int = 0  # tokens with log-probabilities in the reply; 0 when the upstream gave none
    mean_logprob: float | None = None  # over the answer's tokens: the mean-log-probability baseline
    answer_logprobs: list[float] | None = None  # the answer's own tokens', for the lp component

    @classmethod
    def of(cls, result: ComponentResult | None) -> AnswerDetails | None:
        """The details of an answer step's result; None without one (given mode) or when they do not fit."""
        if result is None or not isinstance(result.details, dict):
            return None
        try:
            return cls.model_validate(result.details)
        except ValidationError:
            return None


class ItemOutcome(BaseModel):
    item_id: str
    question_id: str
    answerer: str | None = None  # who wrote the answer: a MixedQA model, "reference", or the model group
    group: str | None = None
    answer: str
    label: int  # 1 correct, 0 incorrect
    label_source: str  # "human" | "reference" | "gold-match"
    gold_match: bool | None = None  # the matching label too, where gold answers exist (agreement with humans)
    components: dict[str, ComponentResult] = Field(default_factory=dict)

    def details(self, component: str, kind: type[D]) -> D | None:
        """A scored component's typed details; None when it did not run, failed, or has others."""
        result = self.components.get(component)
        return result.details if result is not None and not result.error and isinstance(result.details, kind) else None

    def answer_details(self) -> AnswerDetails | None:
        """What the answer step recorded; None in given mode, where no answer step ran."""
        return AnswerDetails.of(self.components.get("answer"))

    def value(self, component: str) -> float | None:
        result = self.components.get(component)
        return None if result is None or result.error else result.value


@dataclass(frozen=True)
class Signal:
    key: str
    title: str
    probability: bool  # a value in [0, 1] meant as a probability of being correct
    paper_row: str | None  # "bc" / "fc" / "ov": the Table 1 row it reproduces
    read: Callable[[ItemOutcome], float | None]


def _both_scored(outcome: ItemOutcome, name: str = "ov") -> OVDetails | None:
    """Trust_OV's (``name``: "ov" or "ov_paper") details only where it combined both components (else it repeats
    one of them)."""
    ov = outcome.details(name, OVDetails)
    return ov if ov is not None and ov.source == "bc+fc" else None


def _bc(outcome: ItemOutcome) -> BCDetails:
    return outcome.details("bc", BCDetails) or BCDetails()


def _lp(outcome: ItemOutcome) -> LPDetails:
    return outcome.details("lp", LPDetails) or LPDetails()


def _words(outcome: ItemOutcome) -> float:
    return float(len(outcome.answer.split()))


SIGNALS: tuple[Signal, ...] = (
    Signal("bc_binary", "Trust_BC (binary)", True, "bc", lambda o: _bc(o).binary),
    Signal("bc_graded", "Trust_BC (graded)", True, None, lambda o: _bc(o).graded),
    Signal("bc_letter_probability", "Trust_BC (letter probability)", True, None, lambda o: _bc(o).logprob),
    Signal(
        "bc_debiased", "Trust_BC (debiased: agreement beyond the letter prior)", True, None, lambda o: _bc(o).debiased
    ),
    Signal(
        "bc_paper", "Trust_BC (paper procedure: random positions, binary)", True, None, lambda o: o.value("bc_paper")
    ),
    Signal("fc", "Trust_FC", True, "fc", lambda o: o.value("fc")),
    Signal("fc_text", "Trust_FC (paper's text judge)", True, None, lambda o: o.value("fc_text")),
    Signal("lp", "lp (geometric-mean token probability)", True, None, lambda o: o.value("lp")),
    Signal("lp_min", "lp (least likely token's probability)", True, None, lambda o: _lp(o).min_probability),
    Signal("sc", "sc (sampled-answer agreement)", True, None, lambda o: o.value("sc")),
    Signal("ev", "ev (evidence agreement; abstentions left out)", True, None, lambda o: o.value("ev")),
    Signal("ov_table3", "Trust_OV (Table 3)", True, "ov", lambda o: ov.table3 if (ov := _both_scored(o)) else None),
    Signal("ov_graded", "Trust_OV (graded)", True, None, lambda o: ov.graded if (ov := _both_scored(o)) else None),
    Signal(
        "ov_paper_table3",
        "Trust_OV (Table 3 of the paper's BC and FC)",
        True,
        None,
        lambda o: ov.table3 if (ov := _both_scored(o, "ov_paper")) else None,
    ),
    Signal(
        "ov_default",
        "Trust_OV (default: the shipped prior over every component present)",
        True,
        None,
        lambda o: o.value("ov_default"),
    ),
    Signal("ov_fitted", "Trust_OV (fitted, cross-validated)", True, None, lambda o: o.value("ov_fitted")),
    Signal("answer_words", "baseline: answer length (words)", False, None, _words),
    Signal(
        "mean_logprob",
        "baseline: mean token log-probability",
        False,
        None,
        lambda o: details.mean_logprob if (details := o.answer_details()) else None,
    ),
    Signal("verbal_confidence", "baseline: verbalised confidence", True, None, lambda o: o.value("verbal")),
)


def signal_values(signal: Signal, outcomes: list[ItemOutcome]) -> tuple[list[float], list[int]]:
    """(scores, labels) over the outcomes where the signal has a value."""
    pairs = [(float(v), o.label) for o in outcomes if (v := signal.read(o)) is not None]
    return [s for s, _ in pairs], [y for _, y in pairs]


def by_answerer(outcomes: list[ItemOutcome]) -> dict[str, list[ItemOutcome]]:
    """Outcomes grouped by who wrote the answer, groups in order of first appearance."""
    groups: dict[str, list[ItemOutcome]] = {}
    for outcome in outcomes:
        groups.setdefault(outcome.answerer or "?", []).append(outcome)
    return groups
