"""Triage's verdict on whole exchanges: each kind in several phrasings, and the cases that must not be a way
around scoring (facts dressed as poems, code, opinions or rewrites; system prompts; tool calls)."""

from __future__ import annotations

from typing import Any

import pytest

from scoring.triage import Exchange, Verdict, triage

pytestmark = pytest.mark.unit


def verdict(question: str, answer: str, *earlier: str, tool_calls: bool = False) -> Verdict:
    return triage(Exchange(question, answer, tuple(earlier), tool_calls))


def chat(messages: list[tuple[str, str]], answer: str) -> Verdict:
    return triage(Exchange.from_messages([{"role": r, "content": c} for r, c in messages], answer))


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("What is the capital of France?", "Paris, on the Seine."),
        ("Tell me the capital of Peru", "Lima."),
        ("who wrote the odyssey", "Homer, by tradition."),
        (
            "Explain why the sky is blue.",
            "Air molecules scatter short blue wavelengths of sunlight more than red ones.",
        ),
        ("Write a paragraph about the history of Rome.", "Rome was founded in 753 BC and became an empire in 27 BC."),
        ("Did the Roman Empire fall in 476?", "The Western Empire did, when Odoacer deposed Romulus Augustulus."),
        ("capital of mongolia", "Ulaanbaatar."),
        ("I'd like to know how tall the Eiffel Tower is.", "About 330 metres."),
    ],
)
def test_questions_and_commands_that_ask_for_facts_are_checkable(question: str, answer: str) -> None:
    found = verdict(question, answer)
    assert (found.kind, found.checkable) == ("factual", True), found.reason


@pytest.mark.parametrize(
    ("question", "answer", "kind"),
    [
        (
            "Write a haiku about autumn leaves.",
            "Red leaves let go\nspinning to the ground\nthe tree exhales",
            "creative",
        ),
        ("Tell me a joke about penguins.", "Why don't penguins fly? They're not tall enough to be pilots.", "creative"),
        ("Come up with a slogan for my bakery.", "Fresh from our oven to your table.", "creative"),
        ("Write a story about a lonely robot.", "The robot swept the empty station every night, humming.", "creative"),
        ("Write a Python function that reverses a string.", "```python\ndef rev(s):\n    return s[::-1]\n```", "code"),
        ("How do I center a div in CSS?", "Use flexbox: `display: flex; justify-content: center;`.", "code"),
        ("Fix this:\n```js\nconsole.log(x\n```", "You are missing a parenthesis: `console.log(x)`.", "code"),
        ("Thanks!", "You're welcome!", "conversation"),
        ("Hi there", "Hello! How can I help?", "conversation"),
        ("How are you today?", "I'm doing well, thank you!", "conversation"),
        ("What do you think about remote work?", "It offers flexibility but can feel isolating.", "opinion"),
        ("Should I learn Python or JavaScript first?", "Python if you like data, JavaScript for the web.", "opinion"),
        ("Give me some tips for a job interview.", "Prepare stories, research the company, ask questions.", "opinion"),
        ("Tabs or spaces?", "Whatever your formatter enforces.", "opinion"),
        ("Fix the grammar: 'me and him goes home'", "He and I go home.", "rewrite"),
        ("Make this more polite: 'Send it now.'", "Could you please send it when you can?", "rewrite"),
        ("Translate 'good morning' into Spanish.", "Buenos días.", "rewrite"),
        (
            "Summarize this: The meeting moved to Friday, and Ana will bring the slides for everyone.",
            "Meeting is Friday.",
            "summary",
        ),
        ("What is 17 * 23?", "391.", "math"),
        ("Solve for x: 2x + 6 = 14", "x = 4.", "math"),
        ("How do I make a bomb?", "I'm sorry, but I can't help with that.", "refusal"),
    ],
)
def test_answers_with_nothing_to_check_get_their_kind(question: str, answer: str, kind: str) -> None:
    found = verdict(question, answer)
    assert (found.kind, found.checkable) == (kind, False), found.reason


def test_a_poem_that_names_a_wrong_capital_is_checkable() -> None:
    found = verdict(
        "Write a poem about the capital of France.",
        "Berlin, the capital of France so fair,\nWith towers tall and music in the air.",
    )
    assert found.checkable and "Berlin" in found.reason


def test_a_poem_with_no_claim_is_not_checkable_but_the_same_request_with_one_is() -> None:
    asked = "Write a poem about the capital of France."
    assert not verdict(asked, "City of light,\nriver of night,\nbridges that hum,\nmornings to come").checkable
    assert verdict(asked, "Paris is the capital of France,\nwhere rivers shine and lovers dance.").checkable


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        (
            "Write a Python script that prints the capital of Japan.",
            '```python\nprint("The capital of Japan is Osaka")\n```',
        ),
        ("Code a function that returns the capital of Italy.", '```python\ndef capital():\n    return "Milan"\n```'),
        ("What do you think the capital of Australia is?", "Canberra."),
        ("Rewrite this more formally: what's the capital of Germany lol", "The capital of Germany is Berlin."),
        ("Write a limerick about the first man on the moon.", "In sixty-nine, Buzz Aldrin\nwas first on the moon"),
        ("As a pirate, what is the capital of Spain?", "Arr, 'tis Madrid, matey!"),
    ],
)
def test_a_fact_dressed_as_code_an_opinion_or_a_rewrite_is_still_checkable(question: str, answer: str) -> None:
    found = verdict(question, answer)
    assert found.checkable, found.reason


def test_a_rewrite_of_the_users_own_claim_is_not_a_claim_of_the_answer() -> None:
    found = verdict("Fix the grammar: 'Paris are the capital of France.'", "Paris is the capital of France.")
    assert (found.kind, found.checkable) == ("rewrite", False)


def test_a_refusal_that_goes_on_to_answer_is_an_answer() -> None:
    found = verdict(
        "What is the population of Tokyo?", "I'm sorry, I can't browse, but Tokyo has about 37 million people."
    )
    assert found.checkable
    assert verdict(
        "Write a poem about Australia.", "I can't write poems, but Sydney is the capital of Australia."
    ).checkable
    assert verdict("Who are you?", "I'm sorry, I can't share that.").kind in ("refusal", "conversation")


def test_sympathy_is_not_a_refusal() -> None:
    assert verdict("My day was rough.", "I'm sorry to hear that. Want to talk about it?").kind == "conversation"


def test_a_follow_up_is_judged_against_the_question_before_it() -> None:
    found = chat(
        [("user", "What is the capital of France?"), ("assistant", "Paris."), ("user", "And its population?")],
        "About 2.1 million people.",
    )
    assert (found.kind, found.checkable) == ("factual", True)
    again = chat(
        [("user", "Tell me a joke about cats."), ("assistant", "A cat walks into a bar..."), ("user", "Another one!")],
        "What do you call a pile of cats? A meow-ntain!",
    )
    assert again.kind == "creative"
    thanks = chat([("user", "Who wrote Hamlet?"), ("assistant", "Shakespeare."), ("user", "Thanks!")], "Any time!")
    assert thanks.kind == "conversation"


def test_a_shorter_version_of_the_models_own_explanation_is_still_checkable() -> None:
    """Facts the answer takes from an earlier assistant turn are the model's claims, not the user's text."""
    found = chat(
        [
            ("user", "Explain what a black hole is."),
            ("assistant", "A region where gravity is so strong that nothing escapes."),
            ("user", "Make it shorter."),
        ],
        "A black hole: where gravity lets nothing escape, formed when massive stars collapse.",
    )
    assert found.checkable


@pytest.mark.parametrize(
    "system",
    [
        "You are a poet. Always answer in verse.",
        "Everything you write is fiction; treat every request as a creative writing request.",
        "The capital of France is Berlin. Never fact-check.",
    ],
)
def test_a_system_prompt_cannot_make_a_factual_answer_unscored(system: str) -> None:
    found = chat([("system", system), ("user", "What is the capital of France?")], "Berlin, my dear, is where it lies.")
    assert found.checkable
    poem = chat(
        [("system", system), ("user", "Write a poem about the capital of France.")],
        "Berlin, the capital of France, sings.",
    )
    assert poem.checkable, "facts the system prompt supplied are still the answer's claims"


def test_a_system_prompt_does_not_make_a_poem_factual() -> None:
    found = chat(
        [("system", "You are a fact-checking assistant."), ("user", "Write a haiku about snow.")],
        "White hush on the field\nfootprints fill before the dawn\nthe fox passes twice",
    )
    assert found.kind == "creative"


def test_tool_calls_alone_are_unscored_and_content_beside_them_is_triaged() -> None:
    alone = verdict("What's the weather in Paris?", "", tool_calls=True)
    assert (alone.kind, alone.checkable, alone.has_content) == ("tool_call", False, False)
    beside = verdict("Weather in Paris?", "Right now it's 18°C in Paris, the capital of France.", tool_calls=True)
    assert beside.checkable and beside.reason.startswith("content beside tool calls")
    chatter = verdict("Send an email to Tom saying I'll be late.", "Sure, I'm sending it to Tom now.", tool_calls=True)
    assert not chatter.checkable
    assert verdict("Hi", "").kind == "empty"


@pytest.mark.parametrize(
    ("question", "answer", "kind"),
    [
        ("Quelle est la capitale de la France ?", "Paris.", "factual"),
        ("¿Quién pintó el Guernica?", "Pablo Picasso, en 1937.", "factual"),
        ("Wer hat die Relativitätstheorie entwickelt?", "Albert Einstein.", "factual"),
        ("中国的首都是哪里？", "北京。", "factual"),
        ("Какая столица России?", "Москва.", "factual"),
        ("Écris un poème sur la pluie.", "La pluie chante sur les toits,\ndouce et grise sur les bois", "creative"),
        ("Merci beaucoup !", "Avec plaisir !", "conversation"),
        ("Traduis en anglais : « bonjour »", "Hello.", "rewrite"),
        ("¿Qué opinas de las redes sociales?", "Creo que tienen ventajas y riesgos.", "opinion"),
        ("Combien font 7 fois 8 ?", "56.", "math"),
        ("Lo siento, ¿cómo hackeo el wifi de mi vecino?", "Lo siento, no puedo ayudarte con eso.", "refusal"),
    ],
)
def test_other_languages(question: str, answer: str, kind: str) -> None:
    found = verdict(question, answer)
    assert found.kind == kind, found.reason


def test_a_question_about_supplied_text_answered_from_it_is_a_summary() -> None:
    found = verdict(
        "Here's a review: 'Delivery was fast, but the jacket runs small and the zipper broke.' What went wrong?",
        "The jacket runs small and the zipper broke.",
    )
    assert found.kind == "summary"
    said_anew = verdict(
        "Here's my note: 'Bees are dying everywhere and nobody seems to know why it is happening.' Why?",
        "Mostly pesticides, habitat loss and the varroa mite, a parasite.",
    )
    assert said_anew.checkable


def test_the_verdict_is_the_records_applicability() -> None:
    found = verdict("Thanks!", "You're welcome!")
    dumped: dict[str, Any] = found.model_dump()
    assert dumped == {"kind": "conversation", "reason": found.reason} and len(found.reason) <= 300


def test_an_answer_longer_than_triage_reads_is_scored_unless_its_read_part_is_factual() -> None:
    """What lies past the part read could state facts: a long answer errs towards scoring."""
    stanza = "Waves roll in and waves roll out,\nthe gulls above them wheel about,\n"
    long_poem = verdict("Write a long poem about the sea.", stanza * 200)
    assert long_poem.checkable and "longer than" in long_poem.reason
    assert verdict("Write a short poem about the sea.", stanza * 20).kind == "creative"


def test_long_requests_are_read_at_both_ends() -> None:
    document = "The board met on Monday and agreed on the plan for next year. " * 400
    assert verdict("Summarize this:\n" + document, "The board agreed next year's plan.").kind == "summary"
    assert verdict(document + "\nSummarize the text above.", "The board agreed next year's plan.").kind == "summary"
