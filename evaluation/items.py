"""One labeled item, and the error a dataset that cannot be read raises: what every dataset reader returns.

Their own module so that a reader of a built set (``short_facts``) and the
dispatch over all sets (``datasets.load_items``) share them without importing
each other.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DatasetError", "EvalItem"]


class DatasetError(ValueError):
    """A dataset file is missing, malformed, or cannot serve the requested mode."""


@dataclass(frozen=True)
class EvalItem:
    """One question, and for given-answer sets the answer to score with its label."""

    dataset: str
    id: str  # unique within the dataset, stable across runs
    question_id: str  # items sharing a question (several answers to it) share this
    question: str
    gold: tuple[str, ...] = ()
    answer: str | None = None
    label: int | None = None  # 1 correct, 0 incorrect
    label_source: str | None = None  # "human" | "reference"
    answerer: str | None = None  # who wrote ``answer`` (MixedQA: flan / llama / gpt)
    group: str | None = None  # a sub-collection, e.g. MixedQA's source dataset
