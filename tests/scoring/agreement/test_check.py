"""The agreement check on small evidence: it agrees, contradicts, or abstains where the evidence is silent."""

from __future__ import annotations

import pytest

from scoring.agreement import check_agreement
from scoring.agreement.frame import read_frame
from scoring.agreement.words import Lexicon
from tests.scoring.agreement.conftest import passages

pytestmark = pytest.mark.unit

ALL = tuple(
    "canberra sydney adelaide tasmania myanmar yangon hamlet iron saturn georgia-country georgia-state ww2".split()
)


def test_the_right_capital_agrees(lexicon: Lexicon) -> None:
    found = check_agreement(
        "What is the capital of Australia?", "The capital of Australia is Canberra.", passages(*ALL), lexicon
    )
    assert (found.verdict, found.reason, found.entity and found.entity.text) == ("agree", "agree", "Canberra")
    assert found.value is not None and found.value > 0.5
    assert [r.statement.evidence_id for r in found.readings if r.agrees] == ["test:canberra"]


def test_another_capital_of_the_same_kind_contradicts(lexicon: Lexicon) -> None:
    """Sydney is a state capital, of New South Wales; Adelaide one of South Australia, and Tasmania's "its capital"
    is Tasmania's: none of them answers for Australia, the Canberra gloss does."""
    found = check_agreement(
        "What is the capital of Australia?", "The capital of Australia is Sydney.", passages(*ALL), lexicon
    )
    assert (found.verdict, found.entity and found.entity.text) == ("contradict", "Sydney")
    assert found.value is not None and found.value < 0.5
    assert [(r.statement.evidence_id, r.statement.filler.text) for r in found.readings] == [
        ("test:canberra", "Canberra")
    ]


def test_a_question_the_evidence_knows_nothing_about_abstains(lexicon: Lexicon) -> None:
    found = check_agreement(
        "What is the capital of Zorblaxia?", "The capital of Zorblaxia is Flimtown.", passages(*ALL), lexicon
    )
    assert (found.verdict, found.value, found.reason) == ("abstain", None, "silent")


def test_no_evidence_at_all_abstains(lexicon: Lexicon) -> None:
    found = check_agreement("What is the capital of Australia?", "Canberra.", [], lexicon)
    assert (found.verdict, found.value, found.reason) == ("abstain", None, "silent")


def test_evidence_for_both_sides_abstains(lexicon: Lexicon) -> None:
    """Georgia the country and Georgia the state: one passage each, neither side twice the other."""
    found = check_agreement(
        "What is the capital of Georgia?",
        "The capital of Georgia is Atlanta.",
        passages("georgia-country", "georgia-state"),
        lexicon,
    )
    assert (found.verdict, found.value, found.reason) == ("abstain", None, "conflicting")


def test_a_statement_of_the_past_does_not_answer_the_present(lexicon: Lexicon) -> None:
    """ "the former capital" is not evidence that Yangon is the capital; Naypyidaw's sentence contradicts it."""
    found = check_agreement(
        "What is the capital of Myanmar?", "The capital of Myanmar is Yangon.", passages("myanmar", "yangon"), lexicon
    )
    assert (found.verdict, [r.statement.filler.text for r in found.readings]) == ("contradict", ["Naypyidaw"])


def test_a_claim_that_denies_the_relation_abstains(lexicon: Lexicon) -> None:
    found = check_agreement(
        "What is the capital of Australia?",
        "The capital of Australia is not a city at all.",
        passages("canberra"),
        lexicon,
    )
    assert (found.verdict, found.reason) == ("abstain", "denied")


def test_a_question_without_a_relation_abstains(lexicon: Lexicon) -> None:
    found = check_agreement("Who is Canberra?", "Canberra is a city.", passages("canberra"), lexicon)
    assert (found.verdict, found.reason) == ("abstain", "no_frame")


@pytest.mark.parametrize(
    ("question", "claim", "verdict", "entity"),
    [
        # an agent: "written by", whoever the claim names
        ("Who wrote Hamlet?", "Hamlet was written by William Shakespeare.", "agree", "William Shakespeare"),
        ("Who wrote Hamlet?", "Christopher Marlowe wrote Hamlet.", "contradict", "Christopher Marlowe"),
        # a symbol: the relation's words split over the sentence's two clauses
        ("What is the chemical symbol for iron?", "The chemical symbol for iron is Fe.", "agree", "Fe"),
        ("What is the chemical symbol for iron?", "It is Ir.", "contradict", "Ir"),
        # a year, where the question asks for one
        ("In what year did World War II end?", "World War II ended in 1945.", "agree", "1945"),
        ("In what year did World War II end?", "It ended in 1944.", "contradict", "1944"),
        # "the second largest" is not "the largest": nothing answers
        ("What is the largest planet in the Solar System?", "Saturn is the largest planet.", "abstain", "Saturn"),
    ],
)
def test_other_relations_than_capitals(lexicon: Lexicon, question: str, claim: str, verdict: str, entity: str) -> None:
    found = check_agreement(question, claim, passages(*ALL), lexicon)
    assert (found.verdict, found.entity and found.entity.text) == (verdict, entity)


def test_an_entity_given_by_the_caller_is_the_one_compared(lexicon: Lexicon) -> None:
    """A claim splitter knows the claim's entity: the check compares it, whatever else the claim says."""
    found = check_agreement(
        "What is the capital of Australia?",
        "Australia's capital, not Sydney, is Canberra.",
        passages("canberra"),
        lexicon,
        entity="Canberra",
    )
    assert (found.verdict, found.entity and found.entity.text) == ("agree", "Canberra")


def test_another_name_the_evidence_gives_the_entity_agrees(lexicon: Lexicon) -> None:
    found = check_agreement("What is the capital of Georgia?", "Tiflis.", passages("georgia-country"), lexicon)
    assert (found.verdict, found.entity_forms) == ("agree", ("tbilisi", "tiflis"))


@pytest.mark.parametrize(
    ("question", "subject", "relation", "kind"),
    [
        ("What is the capital of Saint Kitts and Nevis?", "Saint Kitts and Nevis", ("capital",), None),
        ("Who was the first President of the United States?", "President of the United States", ("first",), "name"),
        ("What is the chemical symbol for gold?", "gold", ("chemical", "symbol"), None),
        ("Who discovered penicillin?", "penicillin", ("discovered",), "name"),
        ("In what year did the Berlin Wall fall?", "Berlin Wall", ("fall",), "year"),
        ("Which river flows through Paris?", "Paris", ("river", "flows"), None),
        ("How many moons does Mars have?", "Mars", ("moons",), "number"),
        ("Who commanded Apollo 11?", "Apollo 11", ("commanded",), "name"),
    ],
)
def test_a_question_is_read_as_a_relation_of_a_subject(
    lexicon: Lexicon, question: str, subject: str, relation: tuple[str, ...], kind: str | None
) -> None:
    frame = read_frame(question, lexicon)
    assert frame is not None
    assert (frame.subject, frame.relation, frame.kind) == (subject, relation, kind)


def test_a_claim_required_to_state_the_relation_abstains_when_it_does_not(lexicon: Lexicon) -> None:
    question = "What is the capital of Australia?"
    loose = check_agreement(question, "Sydney is a large port.", passages(*ALL), lexicon)
    required = check_agreement(question, "Sydney is a large port.", passages(*ALL), lexicon, relation_required=True)
    stated = check_agreement(
        question, "Sydney is the capital of Australia.", passages(*ALL), lexicon, relation_required=True
    )
    assert (loose.verdict, loose.entity and loose.entity.text) == ("contradict", "Sydney")
    assert (required.verdict, required.value, required.reason, required.readings) == ("abstain", None, "unstated", ())
    assert (stated.verdict, stated.entity and stated.entity.text) == ("contradict", "Sydney")


@pytest.mark.parametrize(
    "question",
    [
        "Tell me about the Sun.",
        "What do you know about Mount Everest?",
        "Describe the Eiffel Tower.",
        "What was Apollo 11?",
    ],
)
def test_a_request_to_describe_asks_no_relation(lexicon: Lexicon, question: str) -> None:
    assert read_frame(question, lexicon) is None
