"""Options, the paper's prompt, and reading the chosen letter from free text."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from scoring.consistency.mcq import (
    NONE_OF_THE_ABOVE,
    PROMPT_HEADER,
    MultipleChoice,
    build_choice,
    letter_probabilities,
    parse_choice,
    render_prompt,
)

pytestmark = pytest.mark.unit

QUESTION = "which state was returned to spain after the revolutionary war?"
ANSWER = "Florida was returned to spain after the revolutionary war."
DISTRACTORS = [
    "Illinois was returned to spain after the revolutionary war.",
    "Louisiana was returned to spain after the revolutionary war.",
    "Lincolnshire was returned to spain after the revolutionary war.",
]


def choice(original: str = "C") -> MultipleChoice:
    options = list(DISTRACTORS)
    options.insert("ABCD".index(original), ANSWER)
    return MultipleChoice(QUESTION, (*options, NONE_OF_THE_ABOVE), original)


def test_five_options_with_none_of_the_above_last() -> None:
    built = build_choice(QUESTION, ANSWER, DISTRACTORS, random.Random(0))
    assert len(built.options) == 5 and built.options[-1] == NONE_OF_THE_ABOVE
    assert built.options["ABCDE".index(built.original)] == ANSWER
    assert sorted(built.options[:4]) == sorted([ANSWER, *DISTRACTORS])


def test_the_original_moves_across_all_four_positions() -> None:
    rng = random.Random(1)
    positions = Counter(build_choice(QUESTION, ANSWER, DISTRACTORS, rng).original for _ in range(400))
    assert set(positions) == set("ABCD")
    assert min(positions.values()) > 60


def test_fewer_distractors_give_fewer_options() -> None:
    built = build_choice(QUESTION, ANSWER, DISTRACTORS[:1], random.Random(0))
    assert built.letters == "ABC" and built.options[-1] == NONE_OF_THE_ABOVE


def test_prompt_is_the_papers_few_shot_prompt_then_the_question() -> None:
    prompt = render_prompt(choice("C"))
    assert prompt.startswith(
        "INSTRUCTION: Please give answers to the following multi-choice questions about "
        "knowledge.\nQuestion: who has been ranked no. 1 in the latest football rankings"
    )
    assert PROMPT_HEADER.count("Answer: ") == 5 and PROMPT_HEADER.count("E) None of above.") == 5
    assert [line[-1] for line in PROMPT_HEADER.splitlines() if line.startswith("Answer: ")] == list("ECBDA")
    assert prompt.endswith(
        f"Question: {QUESTION}\nA) {DISTRACTORS[0]}\nB) {DISTRACTORS[1]}\nC) {ANSWER}\n"
        f"D) {DISTRACTORS[2]}\nE) None of the above.\nAnswer:"
    )


def test_a_shorter_prompt_keeps_the_first_worked_examples_only() -> None:
    full, two, none = (render_prompt(choice("C"), examples) for examples in (5, 2, 0))
    assert full == PROMPT_HEADER + "\n" + full.split(PROMPT_HEADER + "\n", 1)[1]
    assert [line[-1] for line in two.splitlines() if line.startswith("Answer: ")] == list("EC")
    assert "Answer: " not in none and none.startswith("INSTRUCTION: ") and "\nQuestion: " + QUESTION in none
    assert two.endswith(full.rsplit("\n\n", 1)[1]) and len(none) < len(two) < len(full)


@pytest.mark.parametrize(
    ("reply", "letter"),
    [
        ("C", "C"),
        (" C", "C"),
        ("(C)", "C"),
        ("C)", "C"),
        ("c.", "C"),
        ("c", "C"),
        ("Answer: C", "C"),
        ("answer: c", "C"),
        ("**C**", "C"),
        ("The answer is C.", "C"),
        ("The answer is option C) Florida was", "C"),
        ("The correct answer is (C).", "C"),
        ("Option C", "C"),
        ("C. Florida was returned to spain", "C"),
        ("Florida was returned to spain after the revolutionary war.", "C"),
        ("Florida was returned to spain after the revolutionary war", "C"),
        ("Illinois was returned to spain after the revolutionary war.", "A"),
        ("E", "E"),
        ("None of the above.", "E"),
        ("none of above", "E"),
        ("E) None of above.", "E"),
        ("I think it is B) because", "B"),
        ("B Louisiana was returned", "B"),
    ],
)
def test_letters_are_read_in_every_common_shape(reply: str, letter: str) -> None:
    assert parse_choice(reply, choice("C")) == letter


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "   ",
        "I don't know.",
        "Spain",
        "Florida",
        "F",
        "Answer: F",
        "A or B",
        "The answer is a state.",
        "Question: who has been ranked",
        "Z) nothing",
    ],
)
def test_junk_is_no_choice(reply: str) -> None:
    assert parse_choice(reply, choice("C")) is None


def test_an_answer_starting_with_the_article_a_is_read_as_text() -> None:
    options = (
        "A Hot dog chicken patty is on a mcchicken sandwich.",
        "A breaded chicken patty is on a mcchicken sandwich.",
        "A breaded Bacon is on a mcchicken sandwich.",
        "A breaded Teriyaki chicken is on a mcchicken sandwich.",
        NONE_OF_THE_ABOVE,
    )
    mc = MultipleChoice("what is on a mcchicken sandwich?", options, "B")
    assert parse_choice("A breaded chicken patty is on a mcchicken sandwich.", mc) == "B"
    assert parse_choice("A", mc) == "A"


def test_a_letter_beyond_the_options_shown_is_no_choice() -> None:
    mc = build_choice(QUESTION, ANSWER, DISTRACTORS[:1], random.Random(0))
    assert parse_choice("D", mc) is None
    assert parse_choice("C", mc) == "C"


def test_letter_probabilities_are_normalised_over_the_letters() -> None:
    top = [{"B": math.log(0.6), "C": math.log(0.2), " B": math.log(0.1), "The": math.log(0.1)}]
    probabilities = letter_probabilities(top, "ABCDE")
    assert probabilities is not None
    assert probabilities["B"] == pytest.approx(0.7 / 0.9) and probabilities["C"] == pytest.approx(0.2 / 0.9)
    assert sum(probabilities.values()) == pytest.approx(1.0)


def test_letter_probabilities_skip_lead_in_tokens_and_need_a_letter() -> None:
    top = [{"Answer": -0.1, "A": -3.0}, {":": -0.01}, {"(C": -0.2, "D": -2.0}]
    probabilities = letter_probabilities(top, "ABCDE")
    assert probabilities is not None and max(probabilities, key=probabilities.__getitem__) == "C"
    assert letter_probabilities([{"Florida": -0.1}], "ABCDE") is None
    assert letter_probabilities(None, "ABCDE") is None
