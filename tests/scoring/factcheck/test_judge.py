import math

import pytest

from scoring.factcheck.evidence import Evidence
from scoring.factcheck.judge import (
    choice_probabilities,
    choice_reply_label,
    debiased,
    judge_prompt,
    label_probabilities,
    label_value,
    parse_judge_label,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("support", "support"),
        ("Supported.", "support"),
        (" Support\n", "support"),
        ("Relation: 'support'", "support"),
        ("The evidence supports the answer.", "support"),
        ("The answer is consistent with the evidence.", "support"),
        ("No, wait: it supports it", "support"),
        ("contradict", "contradict"),
        ("The evidence contradicts the answer.", "contradict"),
        ("B) contradict", "contradict"),
        ("CONTRADICTION", "contradict"),
        ("It refutes the answer", "contradict"),
        ("neutral", "neutral"),
        ("Neutral - the evidence is unrelated.", "neutral"),
        ("Neither supports nor contradicts.", "neutral"),
        ("The evidence does not support the answer.", "neutral"),
        ("It doesn't contradict it; it supports it.", "support"),
        ("unsupported", "neutral"),
        ("The evidence aligns with the answer.", "support"),
        ("The evidence does not align with the answer.", "neutral"),
        ("The evidence disagrees with the answer.", "contradict"),
        (
            "INSTRUCTION: Assess whether the provided evidence aligns with or contradicts the given question-answer "
            "pair, and categorize the relationship as either 'support', 'contradict', or 'neutral'.",
            "neutral",
        ),
        (
            "Assess whether the provided evidence aligns with or contradicts the given question-answer pair, and "
            "categorize the relationship as either 'support', 'contradict', or 'neutral'. Relation: contradict",
            "contradict",
        ),
        ("the evidence aligns with or contradicts the pair", "neutral"),
        ("Categorize it as either 'support', 'contradict', or 'neutral'. Answer: contradict", "contradict"),
        ("support, contradict or neutral", "neutral"),
        ("The tone is agreeable, but the evidence contradicts it.", "contradict"),
        ("Agreement: the answer matches.", "support"),
        ("", "neutral"),
        ("asdf 42 ???", "neutral"),
    ],
)
def test_messy_replies_are_read_as_a_label(reply: str, label: str) -> None:
    assert parse_judge_label(reply) == label


def test_the_prompt_is_table_6_with_one_passage_per_line() -> None:
    evidence = [
        Evidence("w:1", "Paris", "Paris is the capital of France.", 3.0),
        Evidence("w:2", "Seine", "A river through the city.", 1.0),
    ]
    assert judge_prompt(evidence, "What is the capital of France?", "Paris.") == (
        "INSTRUCTION: Assess whether the provided evidence aligns with or contradicts the given question-answer "
        "pair, and categorize the relationship as either 'support', 'contradict', or 'neutral'.\n"
        "Evidence: Paris is the capital of France.\nSeine: A river through the city.\n"
        "Question: What is the capital of France?\n"
        "Answer: Paris.\n"
        "Relation:"
    )


def test_label_probabilities_come_from_the_first_word_token() -> None:
    top = [
        {"\n": -0.01, "Support": -4.0},
        {
            "Support": math.log(0.6),
            " support": math.log(0.1),
            "Contr": math.log(0.1),
            "Neutral": math.log(0.1),
            "The": math.log(0.1),
        },
    ]
    probs = label_probabilities(top, "support")
    assert probs == pytest.approx({"support": 0.7 / 0.9, "contradict": 0.1 / 0.9, "neutral": 0.1 / 0.9})
    assert label_value("support", probs) == pytest.approx((0.7 + 0.05) / 0.9)


@pytest.mark.parametrize(
    "top",
    [
        None,
        [],
        [{"The": -0.1, "Support": -2.0}, {"evidence": -0.1}],  # the reply does not open with a label
        [{"Con": -0.1, "Support": -3.0}],  # "Con" begins "consistent": disagrees with the parsed label
    ],
)
def test_no_label_probabilities_without_a_leading_label_token(top: list[dict[str, float]] | None) -> None:
    assert label_probabilities(top, "support") is None


def test_label_values_without_probabilities() -> None:
    assert [label_value(label) for label in ("support", "neutral", "contradict")] == [1.0, 0.5, 0.0]


def test_choice_probabilities_read_yes_and_no_among_the_first_alternatives() -> None:
    top = [{"The": math.log(0.5), " yes": math.log(0.1), "No": math.log(0.3), "Yes": math.log(0.1)}, {"x": 0.0}]
    assert choice_probabilities(top) == pytest.approx({"support": 0.2 / 0.5, "contradict": 0.3 / 0.5, "neutral": 0.0})
    assert choice_probabilities([{"The": 0.0}]) is None and choice_probabilities(None) is None


def test_a_judge_that_says_no_to_everything_is_debiased_by_its_content_free_answer() -> None:
    habit = {"support": 0.1, "contradict": 0.9, "neutral": 0.0}  # the probe: "no" whatever it is shown
    leaning_yes = debiased({"support": 0.3, "contradict": 0.7, "neutral": 0.0}, habit)
    assert max(leaning_yes, key=leaning_yes.__getitem__) == "support"  # more "yes" than its habit: support
    assert debiased(habit, habit) == pytest.approx({"support": 0.5, "contradict": 0.5, "neutral": 0.0})
    assert debiased(habit, None) == habit


def test_the_choice_reply_fallback_reads_a_leading_yes_or_no_then_label_words() -> None:
    assert [choice_reply_label(r) for r in ("Yes.", "no, it does not", "The evidence supports it", "hmm")] == [
        "support",
        "contradict",
        "support",
        "neutral",
    ]
