"""A key made at run time carries its own policy (``key_policy``): a level over the config's ``per_key`` entry,
resolved field by field as every other level is, by every reader of the policy alike."""

from __future__ import annotations

import pytest

from scoring.policy import configured_policy, decide, low_trust, scored_kinds, scoring_reachable
from scoring.settings import PolicySettings, ScoringSettings

pytestmark = pytest.mark.unit

SETTINGS = ScoringSettings.model_validate(
    {
        "mode": "async",
        "sample_rate": 0.5,
        "per_model": {"m": {"sample_rate": 0.25, "on_low_trust": {"below": 0.3}}},
        "per_key": {"team": {"mode": "sync", "applicability": {"score_kinds": ["factual", "math"]}}},
    }
)


def test_a_keys_own_policy_is_read_over_its_per_key_entry_field_by_field() -> None:
    own = PolicySettings.model_validate({"sample_rate": 1.0, "on_low_trust": {"action": "annotate", "below": 0.2}})
    resolved = configured_policy(SETTINGS, model="m", key_name="team", key_policy=own)
    assert (resolved.mode, resolved.sample_rate) == ("sync", 1.0), "mode from per_key, rate from its own"
    assert low_trust(SETTINGS, model="m", key_name="team", key_policy=own).below == 0.2
    assert scored_kinds(SETTINGS, model="m", key_name="team", key_policy=own) == {"factual", "math"}
    without = configured_policy(SETTINGS, model="m", key_name="team")
    assert (without.mode, without.sample_rate) == ("sync", 0.25)


def test_decide_follows_the_keys_own_policy() -> None:
    off = PolicySettings(mode="off")
    decision = decide(SETTINGS, model="m", key_name="team", request_key=str, mode_header=None, key_policy=off)
    assert decision.mode == "off" and not decision.sampled
    assert decide(SETTINGS, model="m", key_name="team", request_key=str, mode_header=None).mode == "sync"


def test_a_keys_own_policy_can_make_scoring_reachable() -> None:
    quiet = ScoringSettings(mode="off", allow_client_mode="lower")
    assert not scoring_reachable(quiet)
    assert scoring_reachable(quiet, [PolicySettings(mode="async")])
    assert not scoring_reachable(quiet, [PolicySettings(sample_rate=1.0)])
