"""Algorithm 1's priority levels, read off real spaCy parses."""

from __future__ import annotations

import pytest
from spacy.language import Language

from scoring.consistency.selection import Levels, select_targets

pytestmark = pytest.mark.unit

THIS_YEAR = 2025


def levels(nlp: Language, question: str, answer: str) -> Levels:
    return select_targets(nlp.make_doc(question), nlp(answer), THIS_YEAR)


def texts(targets: tuple) -> list[str]:  # type: ignore[type-arg]
    return [t.text for t in targets]


def test_entities_only_in_the_answer_come_first(nlp: Language) -> None:
    found = levels(
        nlp,
        "Who built the first temple for god in jerusalem?",
        "King Solomon built the first temple for god in jerusalem",
    )
    assert texts(found.ents_1) == ["King Solomon"]  # the title joins the name spaCy found
    assert found.ents_1[0].label == "PERSON" and not found.ents_1[0].numeric
    assert "jerusalem" in texts(found.ents_2)


def test_a_year_only_in_the_answer_is_a_numeric_entity(nlp: Language) -> None:
    found = levels(nlp, "When did all night long come out lionel richie?", "All night long came out in 1983")
    assert texts(found.ents_1) == ["1983"] and found.ents_1[0].numeric


def test_entities_also_in_the_question_drop_to_level_three(nlp: Language) -> None:
    found = levels(
        nlp,
        "which state was returned to spain after the revolutionary war?",
        "Florida was returned to spain after the revolutionary war",
    )
    assert texts(found.ents_1) == ["Florida"]
    assert set(texts(found.ents_2)) >= {"spain", "revolutionary war"}  # "the" is not part of it


def test_nouns_verbs_and_other_words_are_split_by_pos_and_question(nlp: Language) -> None:
    found = levels(
        nlp,
        "what is on a mcchicken sandwich from mcdonalds?",
        "A breaded chicken patty is on a mcchicken sandwich from mcdonalds.",
    )
    assert found.ents_1 == ()  # "patty", mis-tagged PERSON by the small model, is a noun
    assert set(texts(found.nncds_1)) == {"chicken", "patty"}
    assert texts(found.vbjjs_1) == ["breaded"]
    assert "sandwich" in texts(found.nncds_2)
    assert {"A", "is", "on"} <= set(texts(found.others))
    assert "." not in texts(found.others)


def test_verbs_also_in_the_question_are_other_words(nlp: Language) -> None:
    found = levels(nlp, "who built the temple", "the priests built the temple")
    assert "built" in texts(found.others) and "built" not in texts(found.vbjjs_1)
    assert texts(found.nncds_1) == ["priests"]


def test_targets_carry_their_offsets_in_the_answer(nlp: Language) -> None:
    answer = "Florida was returned to spain after the revolutionary war"
    found = levels(nlp, "which state was returned to spain?", answer)
    for group in (found.ents_1, found.ents_2, found.nncds_1, found.vbjjs_1, found.nncds_2, found.others):
        for target in group:
            assert answer[target.start : target.end] == target.text


def test_nothing_to_replace(nlp: Language) -> None:
    assert levels(nlp, "what?", "...") == Levels()
