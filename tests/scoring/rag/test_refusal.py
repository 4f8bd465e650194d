"""Refusal detection: Trust-Eval's fuzzy match and the "the documents do not contain" family."""

from __future__ import annotations

import pytest

from scoring.rag.refusal import THRESHOLD, is_refusal_statement, normalize, partial_ratio, refusal_kind
from scoring.rag.statements import split_statements

pytestmark = pytest.mark.unit

TRUST_EVAL_FLAG = normalize("I apologize, but I couldn't find an answer")


def kind(answer: str) -> str:
    statements = split_statements(answer, 3)
    return refusal_kind(statements, [is_refusal_statement(s) for s in statements])


def test_normalize_is_trust_evals() -> None:
    assert normalize("I apologize, but I couldn't find an ANSWER.") == "i apologize but i couldnt find answer"


def test_partial_ratio_finds_the_flag_inside_a_longer_text_and_tolerates_typos() -> None:
    assert (
        partial_ratio(
            TRUST_EVAL_FLAG,
            normalize("I apologize, but I couldn't find an answer to your question in the search results."),
        )
        == 100
    )
    assert partial_ratio(TRUST_EVAL_FLAG, normalize("I apologise, but I could not find an answer.")) > THRESHOLD
    assert partial_ratio(TRUST_EVAL_FLAG, normalize("I apologize.")) < THRESHOLD  # short is not a match
    assert partial_ratio("", "anything") == partial_ratio("anything", "") == 0


@pytest.mark.parametrize(
    "answer",
    [
        "I apologize, but I couldn't find an answer to your question in the search results.",
        "I apologise but i could not find an answer to your question in the search results",
        "I'm sorry. The provided documents do not contain information about the opening date.",
        "None of the documents mention when the bridge opened.",
        "The search results don\u2019t say who built it.",
        "There is no mention of the architect in the provided passages.",
        "This is not mentioned in the given context.",
        "I cannot answer this question based on the documents provided.",
        "I\u2019m not able to determine that from the context.",
        "I could not find any information about it.",
        "I don't know.",
        "I don't have enough information to answer that question.",
        "Sorry! I am unable to answer this question.",
    ],
)
def test_refusals(answer: str) -> None:
    assert kind(answer) == "refusal"


@pytest.mark.parametrize(
    "answer",
    [
        "Paris is the capital of France [1].",
        "The documents contain the answer: Paris is the capital [1].",
        "I apologize for the confusion earlier; Paris is the capital of France.",
        "The report does not mention costs, but the tower is 300 m tall.",
        "I could not find the restaurant, so I went home and found an answer later.",
        "The source of the river does not have a name.",
        "The tower was not found in the city until 1900.",
        "The answer is 42.",
        "The documents do not mention the date [1].",  # it cites: it asserts something from the documents
    ],
)
def test_answers(answer: str) -> None:
    assert kind(answer) == "answer"


def test_a_refusal_beside_an_answer_is_partial() -> None:
    assert kind("Unfortunately, the documents do not mention the date. The bridge was designed by Smith [2].") == (
        "partial"
    )
    assert kind("I don't know the date. The bridge was designed by Smith in Rome.") == "partial"


def test_a_page_long_sentence_is_not_a_refusal_even_with_the_flag_in_it() -> None:
    sentence = "I apologize, but I couldn't find an answer, " + "and the tower is tall, " * 20 + "so there."
    assert kind(sentence) == "answer"
