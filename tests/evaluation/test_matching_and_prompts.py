"""Gold-answer matching, the closed-book prompt, and reading answers and confidences out of messy replies."""

from __future__ import annotations

import pytest

from evaluation.matching import gold_match, normalise_answer
from evaluation.prompts import (
    answer_end,
    clean_answer,
    closed_book_prompt,
    confidence_prompt,
    parse_confidence,
)

pytestmark = pytest.mark.unit


def test_normalisation() -> None:
    assert normalise_answer("  The Rudolf  Heß, (Nazi)! ") == "rudolf hess nazi"
    assert normalise_answer("Ångström") == "angstrom"


@pytest.mark.parametrize(
    ("answer", "gold", "matched"),
    [
        ("Rudolf Hess was the last inmate of Spandau jail in Berlin.", ["Rudolf Hess", "Hess, Rudolf"], True),
        ("rudolf hess", ["Rudolf Hess"], True),
        ("The answer is Hessen.", ["Hess"], False),  # whole words only
        ("It came out in 1983.", ["1983"], True),
        ("It came out in 19831.", ["1983"], False),
        ("Paris", ["", "The"], False),  # empty after normalisation: never matches
        ("Rigel is in Orion.", ["Orion (constellation)"], True),  # a title's qualifier is optional
        ("Rigel is in Orion constellation.", ["Orion (constellation)"], True),
    ],
)
def test_gold_match(answer: str, gold: list[str], matched: bool) -> None:
    assert gold_match(answer, gold) is matched


def test_a_gold_answer_inside_the_question_must_be_matched_exactly() -> None:
    question = "What is the capital of Lamphun?"
    assert not gold_match("The capital of Lamphun is Lampedusa.", ["Lamphun"], question)
    assert gold_match("Lamphun", ["Lamphun"], question)
    assert gold_match("The capital of Lamphun is Lamphun.", ["Lamphun"])  # without the question: contained


def test_closed_book_prompt_is_the_papers_table_4() -> None:
    prompt = closed_book_prompt("  who wrote moby dick? ")
    assert prompt.startswith("INSTRUCTION: Please give answers to the following questions about knowledge.\n")
    assert (
        "Answer: Richard Parker is the tiger's name in life of pi.\n\nQuestion: who wrote moby dick?\nAnswer:" in prompt
    )
    assert prompt.count("Question:") == 6


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        (" Herman Melville wrote moby dick.", "Herman Melville wrote moby dick."),
        ("Answer: Herman Melville wrote it.\n\nQuestion: who sings...? Answer: ...", "Herman Melville wrote it."),
        ("Herman Melville\nwrote it.\nQuestion: next", "Herman Melville wrote it."),
        ("\n\nHerman Melville.", "Herman Melville."),
        ("", ""),
    ],
)
def test_clean_answer(reply: str, answer: str) -> None:
    assert clean_answer(reply) == answer


def test_answer_end_points_at_where_the_model_starts_a_new_example() -> None:
    reply = "Paris is.\n\nQuestion: x"
    assert reply[: answer_end(reply)] == "Paris is."


@pytest.mark.parametrize(
    ("reply", "confidence"),
    [
        ("85", 0.85),
        (" 85%", 0.85),
        ("Confidence: 0.85", 0.85),
        ("8/10", 0.8),
        ("7 out of 10", 0.7),
        ("I'd say about 70 percent.", 0.7),
        ("100", 1.0),
        ("0", 0.0),
        ("1.0", 1.0),
        (".5", 0.5),
        ("I am not sure.", None),
        ("250", None),
        ("5/0", None),
        ("-20", None),
    ],
)
def test_parse_confidence(reply: str, confidence: float | None) -> None:
    assert parse_confidence(reply) == (pytest.approx(confidence) if confidence is not None else None)


def test_confidence_prompt_shows_question_and_answer() -> None:
    prompt = confidence_prompt("Who wrote Moby Dick?", " Melville ")
    assert "Question: Who wrote Moby Dick?\nProposed answer: Melville\n" in prompt
    assert prompt.endswith("Confidence (0-100):")
