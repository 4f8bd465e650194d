"""Scoring decisions and job building: pure functions, plain asserts."""

from __future__ import annotations

from typing import Any

import pytest

from scoring.jobs import scoring_job
from scoring.policy import LowTrust, decide, in_sample, low_trust, outcome, scoring_reachable, skip_reason
from scoring.settings import ScoringSettings
from scoring.types import TrustRecord

pytestmark = pytest.mark.unit


def test_sampling_rate_is_respected_and_stable() -> None:
    ids = [f"id-{i}" for i in range(4000)]
    share = sum(in_sample(i, 0.25) for i in ids) / len(ids)
    assert 0.22 < share < 0.28
    assert [in_sample(i, 0.25) for i in ids] == [in_sample(i, 0.25) for i in ids]
    assert all(in_sample(i, 1.0) for i in ids[:10]) and not any(in_sample(i, 0.0) for i in ids[:10])


def test_configured_modes_are_read_in_any_case() -> None:
    """As the x-trustgate-mode header is: ``SYNC`` in a config is sync, not a refusal to start."""
    settings = ScoringSettings(mode="SYNC", per_key={"k": {"mode": " Off"}}, per_model={"m": {"mode": "On"}})
    assert (settings.mode, settings.per_key["k"].mode, settings.per_model["m"].mode) == ("sync", "off", "async")


def test_header_beats_key_beats_model_beats_default() -> None:
    settings = ScoringSettings(
        mode="async",
        per_model={"m": {"mode": "off", "sync_timeout_s": 3}},
        per_key={"k": {"mode": "sync"}},
        queue={"scorer_timeout_s": 2},
    )
    assert decide(settings, model="other", key_name="x", request_key=lambda: "r", mode_header=None).mode == "async"
    assert decide(settings, model="m", key_name="x", request_key=lambda: "r", mode_header=None).mode == "off"
    by_key = decide(settings, model="m", key_name="k", request_key=lambda: "r", mode_header=None)
    assert (by_key.mode, by_key.sync_timeout_s, by_key.sampled) == ("sync", 3, True)
    assert decide(settings, model="m", key_name="k", request_key=lambda: "r", mode_header="off").sampled is False


def test_the_sample_key_is_made_only_for_a_draw() -> None:
    """Hashing a request for its sample draw is skipped where the mode or the rate already decides."""
    asked: list[str] = []

    def key() -> str:
        asked.append("r")
        return "r"

    for settings in (
        ScoringSettings(mode="off", sample_rate=0.5),
        ScoringSettings(mode="async", sample_rate=1.0),
        ScoringSettings(mode="async", sample_rate=0.0),
    ):
        decide(settings, model="m", key_name="k", request_key=key, mode_header=None)
    assert asked == []
    decide(ScoringSettings(mode="async", sample_rate=0.5), model="m", key_name="k", request_key=key, mode_header=None)
    assert asked == ["r"]


@pytest.mark.parametrize(
    "settings, reachable",
    [
        ({"mode": "off"}, False),  # clients may only lower it (the default policy)
        ({"mode": "off", "allow_client_mode": "none"}, False),
        ({"mode": "off", "per_key": {"team-a": {"allow_client_mode": "lower"}}}, False),
        ({"mode": "off", "per_model": {"m": {"sample_rate": 0.5}}, "per_key": {"k": {"mode": "off"}}}, False),
        ({"mode": "async"}, True),
        ({"mode": "off", "allow_client_mode": "any"}, True),  # a client may raise it
        ({"mode": "off", "per_model": {"m": {"mode": "sync"}}}, True),
        ({"mode": "off", "per_key": {"k": {"allow_client_mode": "any"}}}, True),
        # a key's entry turns it off, a model's on: a key without an entry on that model is scored
        ({"mode": "off", "per_model": {"m": {"mode": "async"}}, "per_key": {"k": {"mode": "off"}}}, True),
        # everything on, but every key turned off: a name without an entry still gets the default
        ({"mode": "async", "per_key": {"k": {"mode": "off"}}}, True),
    ],
)
def test_scoring_is_reachable_when_some_key_on_some_model_can_get_a_scored_mode(
    settings: dict[str, object], reachable: bool
) -> None:
    """What the gateway reads to load no scorer at all: it agrees with ``decide`` for the entries' names."""
    assert scoring_reachable(ScoringSettings.model_validate(settings)) is reachable


@pytest.mark.parametrize(
    "answer, tools, reason",
    [
        ("Paris.", False, None),
        ("", False, "empty"),
        ("   ", False, "empty"),
        (None, True, "tool_calls"),
        ("", True, "tool_calls"),
        ("The weather in London: 12°C.", True, None),  # content beside tool calls is content
        # a refusal has content: triage tells a bare one (not_applicable) from one that goes on to answer
        ("I'm sorry, but I can't help with that.", False, None),
        ("I'm sorry, I can't be sure. Anyway: Linus Yale Jr. patented it in 1861.", False, None),
    ],
)
def test_only_an_answer_without_content_has_a_skip_reason(answer: str | None, tools: bool, reason: str | None) -> None:
    assert skip_reason(answer, has_tool_calls=tools) == reason


def test_job_takes_the_last_user_message_as_question() -> None:
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "one"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Who wrote"},
                {"type": "image_url"},
                {"type": "text", "text": "Hamlet?"},
            ],
        },
    ]
    job = scoring_job("j1", "m", messages, "Shakespeare")
    assert job.question == "Who wrote Hamlet?"
    assert job.context == messages[:3] and job.answer == "Shakespeare"


def _policy(**levels: Any) -> ScoringSettings:
    return ScoringSettings.model_validate(levels)


def test_a_block_policy_blocks_unscored_answers_and_holds_streams_unless_told_otherwise() -> None:
    block = low_trust(_policy(on_low_trust={"action": "block"}), model="m", key_name="k")
    assert (block.unscored, block.not_applicable, block.streams) == ("block", "pass", "hold")
    escalate = low_trust(_policy(on_low_trust={"action": "escalate", "escalate_to": "x"}), model="m", key_name="k")
    assert (escalate.unscored, escalate.streams) == ("pass", "pass")
    assert (low_trust(_policy(), model="m", key_name="k").unscored, LowTrust().acts) == ("pass", False)
    # an opt-out at one level holds under a block set at another, field by field
    opted = _policy(
        on_low_trust={"unscored": "pass", "streams": "pass"}, per_key={"k": {"on_low_trust": {"action": "block"}}}
    )
    resolved = low_trust(opted, model="m", key_name="k")
    assert (resolved.action, resolved.unscored, resolved.streams) == ("block", "pass", "pass")
    # a policy that blocks only not applicable answers acts, and holds streams too
    strict = low_trust(_policy(on_low_trust={"not_applicable": "block"}), model="m", key_name="k")
    assert strict.acts and strict.streams == "hold" and strict.unscored == "pass"


@pytest.mark.parametrize(
    ("record", "tool_calls", "expected"),
    [
        (TrustRecord(id="r", status="done", score=0.9), False, "pass"),
        (TrustRecord(id="r", status="done", score=0.1), False, "block"),
        (TrustRecord(id="r", status="skipped", error="skipped: too_long"), False, "escalate"),
        (TrustRecord(id="r", status="pending"), False, "escalate"),
        (TrustRecord(id="r", status="shed", shed_reason="key_share"), False, "escalate"),
        (TrustRecord(id="r", status="failed"), False, "escalate"),
        (TrustRecord(id="r", status="done", score=0.9), True, "escalate"),  # the calls' arguments are unscored
        (TrustRecord(id="r", status="done", score=0.1), True, "block"),  # the stricter of the two
        (TrustRecord(id="r", status="not_applicable"), False, "block"),
    ],
)
def test_what_a_policy_does_with_each_answer(record: TrustRecord, tool_calls: bool, expected: str) -> None:
    policy = LowTrust(action="block", unscored="escalate", not_applicable="block", escalate_to="strong")
    assert outcome(policy, record, tool_calls=tool_calls) == expected


def test_on_probability_an_answer_without_one_is_unscored() -> None:
    policy = LowTrust(action="block", on="probability", unscored="block")
    assert outcome(policy, TrustRecord(id="r", status="done", score=0.9)) == "block"
    assert outcome(policy, TrustRecord(id="r", status="done", score=0.1, probability=0.8)) == "pass"


def test_a_policy_that_acts_on_unscored_answers_scores_every_one_whatever_the_sample_rate() -> None:
    settings = _policy(mode="sync", sample_rate=0.0, on_low_trust={"action": "block"})
    decided = decide(settings, model="m", key_name="k", request_key=lambda: "r", mode_header=None)
    assert decided.sampled
    annotate = _policy(mode="sync", sample_rate=0.0)
    assert not decide(annotate, model="m", key_name="k", request_key=lambda: "r", mode_header=None).sampled
