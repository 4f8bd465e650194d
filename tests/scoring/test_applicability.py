"""The operator's choice of which kinds of answer are scored: global, per model, per key."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from scoring.answer_kinds import CONTENT_KINDS, ContentKind
from scoring.policy import applicability_of, scored_kinds
from scoring.settings import ApplicabilityPolicy, ApplicabilitySettings, PolicySettings, ScoringSettings

pytestmark = pytest.mark.unit


def kinds(*names: ContentKind) -> frozenset[ContentKind]:
    return frozenset(names)


def test_by_default_only_factual_answers_are_scored() -> None:
    settings = ScoringSettings()
    assert scored_kinds(settings, model="any", key_name=None) == kinds("factual")


def test_all_and_a_single_kind_are_read_as_lists() -> None:
    settings = ScoringSettings.model_validate({"applicability": {"score_kinds": "ALL"}})
    assert settings.applicability.score_kinds == list(CONTENT_KINDS)
    assert ScoringSettings.model_validate({"applicability": {"score_kinds": "code"}}).applicability.score_kinds == [
        "code"
    ]


@pytest.mark.parametrize("kinds", [["factual", "poetry"], ["tool_call"], "everything"])
def test_an_unknown_kind_is_refused_at_load(kinds: object) -> None:
    with pytest.raises(ValidationError):
        ScoringSettings.model_validate({"applicability": {"score_kinds": kinds}})
    with pytest.raises(ValidationError):
        ScoringSettings.model_validate({"per_key": {"team": {"applicability": {"score_kinds": kinds}}}})


def test_a_key_beats_a_model_beats_the_global_choice() -> None:
    settings = ScoringSettings.model_validate(
        {
            "applicability": {"score_kinds": ["factual", "math"]},
            "per_model": {"coder": {"applicability": {"score_kinds": ["factual", "code"]}}, "chat": {"mode": "sync"}},
            "per_key": {"strict": {"applicability": {"score_kinds": "all"}}, "plain": {"mode": "async"}},
        }
    )
    assert scored_kinds(settings, model="other", key_name=None) == kinds("factual", "math")
    assert scored_kinds(settings, model="chat", key_name="plain") == kinds(
        "factual", "math"
    )  # entries without a choice
    assert scored_kinds(settings, model="coder", key_name="plain") == kinds("factual", "code")
    assert scored_kinds(settings, model="coder", key_name="strict") == kinds(*CONTENT_KINDS)


def test_an_empty_choice_scores_no_kind() -> None:
    settings = ScoringSettings.model_validate({"per_model": {"m": {"applicability": {"score_kinds": []}}}})
    assert scored_kinds(settings, model="m", key_name=None) == frozenset()
    assert applicability_of("factual", frozenset()) == "not_applicable"


def test_triage_turned_off_scores_every_answer() -> None:
    settings = ScoringSettings.model_validate({"applicability": {"enabled": False}})
    chosen = scored_kinds(settings, model="m", key_name="k")
    assert chosen is None
    assert applicability_of("creative", chosen) == "scored"


def test_a_kind_is_scored_not_applicable_or_unscored() -> None:
    scored = kinds("factual", "code")
    assert applicability_of("factual", scored) == "scored"
    assert applicability_of("code", scored) == "scored"
    assert applicability_of("creative", scored) == "not_applicable"
    # No content is never "not applicable": an acting policy's rule for unscored answers decides it.
    assert applicability_of("tool_call", scored) == "unscored"
    assert applicability_of("empty", None) == "unscored"


def test_every_new_field_is_described() -> None:
    for model in (ApplicabilitySettings, ApplicabilityPolicy):
        assert all(field.description for field in model.model_fields.values())
    assert PolicySettings.model_fields["applicability"].description
    assert ScoringSettings.model_fields["applicability"].description
