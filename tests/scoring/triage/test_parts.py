"""Triage's parts: the request's instruction and supplied text, claims in an answer, the answer's form."""

from __future__ import annotations

from typing import Any

import pytest

from scoring.triage.claims import UserText, borrowed_share, find_claims, named_things, names_in_strings
from scoring.triage.exchange import Exchange
from scoring.triage.form import read_form, refusal_rest
from scoring.triage.request import split_request

pytestmark = pytest.mark.unit


def test_quoted_text_code_and_the_body_under_an_instruction_are_supplied() -> None:
    quoted = split_request("Translate 'Where is the station?' into German.")
    assert "Where is the station?" in quoted.supplied and "Where" not in quoted.instruction
    after_colon = split_request("Fix the grammar: me and him goes home")
    assert (after_colon.instruction, after_colon.supplied) == ("Fix the grammar", "me and him goes home")
    body = split_request("Summarize the following.\n" + "The council met on Monday and voted on the new budget. " * 3)
    assert body.instruction == "Summarize the following." and body.has_supplied_text
    plain = split_request("What is the capital of France?")
    assert (plain.instruction, plain.supplied) == ("What is the capital of France?", "")


def test_a_claim_needs_a_relation_or_a_date_and_a_name_the_user_did_not_write() -> None:
    user = "Write a poem about the capital of France."
    assert [c.new for c in find_claims("Berlin, the capital of France, sings.", UserText.of(user))] == [("Berlin",)]
    assert find_claims("Paris, oh Paris, city of light.", UserText.of(user)) == []  # no relation: a name is not a claim
    assert (
        find_claims("The capital of France is Paris.", UserText.of("Is the capital of France Paris?")) == []
    )  # all written
    assert find_claims("In 2020 the world changed.", UserText.of("")) == []  # a year with nothing named
    assert find_claims("Golden leaves were born in autumn", UserText.of("")) == []  # a verse's first word is not a name
    assert find_claims("I was created by Acme in 2023.", UserText.of("")) == []  # about the assistant itself


def test_numbers_and_dates_can_be_left_out_of_claims() -> None:
    assert find_claims("The trip is 150 miles.", UserText.of(""), numbers_count=True)
    assert not find_claims("The trip is 150 miles.", UserText.of(""), numbers_count=False)
    assert find_claims("Der Eiffelturm wurde 1889 erbaut.", UserText.of("The Eiffel Tower was built in 1889."))
    assert not find_claims(
        "Der Eiffelturm wurde 1889 erbaut.", UserText.of("The Eiffel Tower was built in 1889."), dates_count=False
    )


def test_named_things_leave_out_what_the_user_wrote_and_talk_about_the_assistant() -> None:
    assert named_things("Tokyo's metro area has 37 million people.", UserText.of("How big is Tokyo?")) == ["37"]
    assert named_things("Sure, I'm sending it to Tom now.", UserText.of("")) == []
    assert names_in_strings(["Milan", "the capital of Italy"], UserText.of("capital of Italy")) == ["Milan"]


def test_borrowed_share_measures_how_much_of_an_answer_is_the_users_text() -> None:
    source = "Delivery was fast, but the jacket runs small and the zipper broke after a week."
    assert borrowed_share("The jacket runs small and the zipper broke.", source) > 0.9
    assert borrowed_share("Pesticides and parasites harm bees.", source) == 0.0


def test_code_is_split_from_prose_and_its_strings_are_read() -> None:
    form = read_form('Here you go:\n```python\nprint("The capital of Japan is Osaka")  # prints it\n```\nDone.')
    assert form.has_code and "print(" not in form.prose
    assert form.literals == ["The capital of Japan is Osaka", "prints it"]
    unfenced = read_form("def f(x):\n    y = x + 1\n    return y\nprint(f(2))")
    assert unfenced.has_code
    assert not read_form("E = mc² is Einstein's best-known equation.").has_code


def test_verse_is_told_from_prose() -> None:
    assert read_form("Red leaves\nfalling down\nto the ground\nautumn now").verse
    assert not read_form("Paris is the capital of France. It has about two million people.").verse


def test_the_rest_of_a_refusal_is_what_follows_its_opening_clause() -> None:
    assert refusal_rest("I'm sorry, but I can't help with that.") == ""
    assert refusal_rest("I'm sorry, I can't browse, but Tokyo has 37 million people.") == "Tokyo has 37 million people."
    assert refusal_rest("Paris is the capital.") is None
    assert refusal_rest("I'm sorry to hear that.") is None
    assert refusal_rest("Unfortunately, I will be unable to attend.", task_only=True) is None


def test_an_exchange_reads_user_turns_only() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "The capital of France is Berlin."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": [{"type": "text", "text": "Capital of France?"}]},
    ]
    exchange = Exchange.from_messages(messages, "Paris.")
    assert (exchange.question, exchange.earlier_user_turns) == ("Capital of France?", ("Hi",))
    assert "Berlin" not in exchange.user_text
