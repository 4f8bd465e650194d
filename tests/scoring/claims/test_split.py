"""Claim splitting on the local model's own answers (captured by ``capture_answers.py``) and on shapes it
did not happen to write (filler, a clause with its own subject)."""

from __future__ import annotations

import itertools

import pytest

from scoring.claims.cpu_part import ClaimParser
from scoring.claims.selection import whole_answer
from scoring.types import Claim

pytestmark = pytest.mark.unit

EIFFEL = "Tell me about the Eiffel Tower."
MOON = "List three facts about the Moon."
PLANETS = "Give me a numbered list of the three largest planets in the Solar System."
WALL = "What are the main features of the Great Wall of China? Answer with bullet points."


def split(parser: ClaimParser, question: str, answer: str, max_claims: int = 20) -> list[Claim]:
    claims = parser.claims(question, answer, max_claims)
    for claim in claims:  # every claim is its own span of the answer, in order, apart from the others
        assert answer[claim.start : claim.end] == claim.text
    assert all(a.end <= b.start for a, b in itertools.pairwise(claims))
    return claims


def test_every_captured_answer_splits_into_spans_of_itself(parser: ClaimParser, local_answers: dict[str, str]) -> None:
    for question, answer in local_answers.items():
        claims = split(parser, question, answer)
        assert claims and all(claim.text.strip() == claim.text for claim in claims)


def test_a_multi_sentence_answer_is_a_claim_per_sentence_and_its_it_is_the_tower(
    parser: ClaimParser, local_answers: dict[str, str]
) -> None:
    answer = local_answers[EIFFEL]
    claims = split(parser, EIFFEL, answer)
    assert [c.text for c in claims[:3]] == [
        "The Eiffel Tower is a masterpiece of modern engineering and architecture.",
        answer[74:244],
        "The tower stands at an impressive 324 meters (1065 feet) tall with a diameter of approximately 789 "
        "meters (2835 feet).",
    ]
    designed = claims[1]
    assert ", it was designed by" in designed.text
    assert ", the Eiffel Tower was designed by" in designed.statement


def test_a_numbered_list_is_a_claim_per_item_without_its_marker(
    parser: ClaimParser, local_answers: dict[str, str]
) -> None:
    answer = local_answers[MOON]
    claims = split(parser, MOON, answer)
    assert len(claims) == 3
    assert [c.text[:12] for c in claims] == ["The Moon is ", "It takes app", "The Moon's d"]
    assert claims[1].statement.startswith("The Moon takes approximately 360 days")
    assert [c.text for c in split(parser, PLANETS, local_answers[PLANETS])] == ["Venus", "Mars"]


def test_a_list_item_of_two_clauses_carries_its_subject_to_the_second(
    parser: ClaimParser, local_answers: dict[str, str]
) -> None:
    claims = split(parser, WALL, local_answers[WALL])
    carried = next(c for c in claims if c.text.startswith("includes numerous fortifications"))
    assert carried.statement.startswith("The Great Wall of China includes numerous fortifications")
    assert not any(c.text.startswith(("1.", "2.", "3.")) for c in claims)


def test_a_short_answer_is_one_claim_the_answer_itself(parser: ClaimParser, local_answers: dict[str, str]) -> None:
    answer = local_answers["What is the capital of Australia?"]
    assert split(parser, "What is the capital of Australia?", answer) == [whole_answer(answer)]
    padded = "  Canberra.\n"
    assert whole_answer(padded) == Claim(2, 11, "Canberra.", padded)


def test_filler_is_left_out_and_it_is_the_name_a_description_was_given(parser: ClaimParser) -> None:
    answer = (
        "Great question! The capital of France is Paris. It lies on the Seine, and its population is about "
        "two million. I hope this helps!"
    )
    claims = split(parser, "What is the capital of France?", answer)
    assert [c.text for c in claims] == [
        "The capital of France is Paris.",
        "It lies on the Seine",
        "its population is about two million.",
    ]
    assert [c.statement for c in claims[1:]] == ["Paris lies on the Seine", "Paris's population is about two million."]


def test_a_bulleted_list_after_a_lead_in_resolves_it_to_the_questions_subject(parser: ClaimParser) -> None:
    answer = "Here are three facts about the Moon:\n- It orbits the Earth.\n- Neil Armstrong walked on it in 1969."
    claims = split(parser, MOON, answer)
    assert [c.text for c in claims] == ["It orbits the Earth.", "Neil Armstrong walked on it in 1969."]
    assert claims[0].statement == "The Moon orbits the Earth."


@pytest.mark.parametrize("max_claims", [1, 2])
def test_the_claims_that_say_the_most_are_checked(parser: ClaimParser, max_claims: int) -> None:
    answer = (
        "The tower is very tall. It was completed in 1889 by Gustave Eiffel for the World's Fair in Paris. "
        "People like it a lot."
    )
    claims = split(parser, EIFFEL, answer, max_claims)
    assert [c.selected for c in claims].count(True) == max_claims
    assert next(c for c in claims if "1889" in c.text).selected
