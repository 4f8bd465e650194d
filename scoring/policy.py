"""Decide, per request, whether and how its answer is scored. Pure functions of settings and request facts.

The operator's config outranks the client: a client's ``x-trustgate-mode``
applies only as far as ``allow_client_mode`` lets it (by default it may lower
scoring's cost, never raise it), never below a mode an ``on_low_trust`` action
needs, and a client cannot raise the sample rate.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from .answer_kinds import CONTENT_KINDS, AnswerKind, ContentKind
from .settings import (
    ClientModePolicy,
    InputLimits,
    LowTrustAction,
    LowTrustPolicy,
    NotApplicableAction,
    PolicySettings,
    ScoringMode,
    ScoringSettings,
    UnscoredAction,
)
from .types import UNKNOWN_LABEL, ScoringJob, TrustRecord

__all__ = [
    "DEFAULT_BLOCK_MESSAGE",
    "TOO_LONG",
    "ConfiguredPolicy",
    "Decision",
    "LowTrust",
    "Outcome",
    "Treatment",
    "applicability_of",
    "client_may_choose",
    "configured_policy",
    "decide",
    "in_sample",
    "is_low_trust",
    "is_unscored",
    "low_trust",
    "outcome",
    "own_fit_allowed",
    "resolved_mode",
    "scored_kinds",
    "scoring_reachable",
    "skip_reason",
    "trust_value",
    "within_limits",
]

DEFAULT_BLOCK_MESSAGE = "I can't give a reliable answer to that."

TOO_LONG = "too_long"  # the skip reason of an answer longer than InputLimits.max_answer_chars

# Upstream calls and the user's wait, in order: sync costs both, async the calls, off nothing.
_COST: dict[ScoringMode, int] = {"off": 0, "async": 1, "sync": 2}


@dataclass(frozen=True)
class LowTrust:
    """``on_low_trust`` as it applies to one request: every field resolved."""

    below: float = 0.4
    on: Literal["score", "probability"] = "score"
    action: LowTrustAction = "annotate"
    message: str = DEFAULT_BLOCK_MESSAGE
    escalate_to: str | None = None
    streams: Literal["pass", "hold"] = "pass"
    prefer: Literal["higher", "escalated"] = "higher"
    escalation_timeout_s: float = 30.0
    unscored: UnscoredAction = "pass"
    not_applicable: NotApplicableAction = "pass"
    unknown: Literal["pass", "act"] = "pass"  # an answer labelled unknown (an uninformative model's): left alone

    @property
    def acts(self) -> bool:
        """Whether the policy may change what a client gets: its verdict must exist before the response leaves."""
        return self.action != "annotate" or self.unscored != "pass" or self.not_applicable != "pass"

    @property
    def blocks(self) -> bool:
        """Whether some answer may be blocked: such a policy holds streams unless told to pass them."""
        return "block" in (self.action, self.unscored, self.not_applicable)


# What an acting policy does with one answer, from the mildest: it goes out, it is asked again elsewhere, it is
# replaced by the policy's message.
Outcome = Literal["pass", "escalate", "block"]
_SEVERITY: tuple[Outcome, ...] = ("pass", "escalate", "block")
_LOW_OUTCOME: dict[LowTrustAction, Outcome] = {"annotate": "pass", "block": "block", "escalate": "escalate"}


@dataclass(frozen=True)
class Decision:
    mode: ScoringMode
    sync_timeout_s: float
    sampled: bool
    refused_mode: ScoringMode | None = None  # a client's mode the policy did not allow (ignored, to be counted)
    on_low_trust: LowTrust = LowTrust()


@dataclass(frozen=True)
class ConfiguredPolicy:
    """When one key's requests to one model group are scored, every level resolved, before any client header."""

    mode: ScoringMode
    sample_rate: float
    sync_timeout_s: float
    allow_client_mode: ClientModePolicy


def _overrides(
    settings: ScoringSettings, model: str, key_name: str | None, key_policy: PolicySettings | None
) -> list[PolicySettings]:
    """The entries over the global policy, lowest first: the model group's, the key's ``per_key`` entry, and the
    policy a key made at run time carries itself (``key_policy``), which the config cannot name."""
    levels = (settings.per_model.get(model), settings.per_key.get(key_name or ""), key_policy)
    return [level for level in levels if level is not None]


def low_trust(
    settings: ScoringSettings, *, model: str, key_name: str | None, key_policy: PolicySettings | None = None
) -> LowTrust:
    """``on_low_trust`` field by field: the key's own > per-key > per-model > global > LowTrust's defaults.

    Two defaults follow the resolved action rather than a fixed value, so that a block holds unless the operator
    opts out: ``unscored`` is ``block`` for a block policy (else ``pass``), and ``streams`` is ``hold`` for a
    policy that may block anything (else ``pass``).
    """
    resolved = LowTrust()
    levels: list[LowTrustPolicy | None] = [settings.on_low_trust]
    levels += [override.on_low_trust for override in _overrides(settings, model, key_name, key_policy)]
    given: set[str] = set()
    for level in levels:
        if level is not None:
            fields = {name: getattr(level, name) for name in level.model_fields_set if getattr(level, name) is not None}
            resolved = replace(resolved, **fields)
            given |= set(fields)
    if "unscored" not in given and resolved.action == "block":
        resolved = replace(resolved, unscored="block")
    if "streams" not in given and resolved.blocks:
        resolved = replace(resolved, streams="hold")
    return resolved


def own_fit_allowed(settings: ScoringSettings, *, model: str, key_name: str) -> bool:
    """Whether a key's labels may teach, and its records use, a fit of its own on ``model``
    (``feedback.scope: key``): never where a low-trust policy acts on its answers, which that fit would decide."""
    return settings.feedback.scope == "key" and not low_trust(settings, model=model, key_name=key_name).acts


def resolved_mode(
    settings: ScoringSettings, *, model: str, key_name: str | None, key_policy: PolicySettings | None = None
) -> ScoringMode:
    """The configured mode of a model for a key, before any client header."""
    return configured_policy(settings, model=model, key_name=key_name, key_policy=key_policy).mode


def configured_policy(
    settings: ScoringSettings, *, model: str, key_name: str | None, key_policy: PolicySettings | None = None
) -> ConfiguredPolicy:
    """Mode, sample rate, sync wait and client policy of ``key_name`` on ``model``: the key's own > per-key >
    per-model > global."""
    mode, rate, timeout = settings.mode, settings.sample_rate, settings.sync_timeout_s
    policy = settings.allow_client_mode
    for override in _overrides(settings, model, key_name, key_policy):
        mode = override.mode or mode
        rate = override.sample_rate if override.sample_rate is not None else rate
        timeout = override.sync_timeout_s or timeout
        policy = override.allow_client_mode or policy
    return ConfiguredPolicy(mode=mode, sample_rate=rate, sync_timeout_s=timeout, allow_client_mode=policy)


def scored_kinds(
    settings: ScoringSettings, *, model: str, key_name: str | None, key_policy: PolicySettings | None = None
) -> frozenset[ContentKind] | None:
    """The kinds of answer scored for ``key_name`` on ``model``: the key's own > per-key > per-model > global
    ``score_kinds``.

    None: triage is off (``applicability.enabled: false``), and every answer is scored as today.
    """
    if not settings.applicability.enabled:
        return None
    kinds = settings.applicability.score_kinds
    for override in _overrides(settings, model, key_name, key_policy):
        if override.applicability is not None and override.applicability.score_kinds is not None:
            kinds = override.applicability.score_kinds
    return frozenset(kinds)


# What triage's verdict means for one answer: scored as usual; not_applicable (no score, no label, no upstream
# scoring call; an acting policy's not_applicable rule decides it); unscored (no content to score: only tool calls,
# or none; recorded as skipped, and an acting policy's rule for unscored answers decides it).
Treatment = Literal["scored", "not_applicable", "unscored"]


def applicability_of(kind: AnswerKind, kinds: frozenset[ContentKind] | None) -> Treatment:
    """Whether an answer of triage's ``kind`` is scored under ``kinds`` (``scored_kinds``; None: every answer).

    Takes the kind rather than triage's verdict, so that deciding never loads triage's rules.
    """
    if kind not in CONTENT_KINDS:
        return "unscored"
    if kinds is None or kind in kinds:
        return "scored"
    return "not_applicable"


def trust_value(record: TrustRecord, on: Literal["score", "probability"]) -> float | None:
    """What a low-trust policy compares: the record's combined score, or its calibrated probability."""
    return record.probability if on == "probability" else record.score


def is_low_trust(policy: LowTrust, record: TrustRecord) -> bool:
    """A record whose value is below the policy's bound. One without a value is not low but unscored or not
    applicable (``outcome`` gives it those rules); one labelled unknown (its model's scores are known to carry no
    information) is never low unless the policy says ``unknown: act``."""
    if record.label == UNKNOWN_LABEL and policy.unknown == "pass":
        return False
    value = trust_value(record, policy.on)
    return value is not None and value < policy.below


def is_unscored(policy: LowTrust, record: TrustRecord) -> bool:
    """An answer with no value for the policy to compare, for any reason: skipped (too long, a refusal, only
    tool calls, nothing to score), pending past the sync wait, shed, failed; or, for a policy ``on:
    probability``, a score without a calibrated probability. Not applicable answers are not unscored."""
    return record.status != "not_applicable" and trust_value(record, policy.on) is None


def outcome(policy: LowTrust, record: TrustRecord, *, tool_calls: bool = False) -> Outcome:
    """What ``policy`` does with an answer whose record is ``record``.

    Not applicable: its ``not_applicable`` rule. No value: its ``unscored`` rule. Below ``below``: its action.
    An answer with tool calls has its content scored, but the calls' arguments are not (``skip_reason``): the
    stricter of its content's outcome and the ``unscored`` rule applies to it.
    """
    if record.status == "not_applicable":
        decided: Outcome = policy.not_applicable
    elif is_unscored(policy, record):
        decided = policy.unscored
    else:
        decided = _LOW_OUTCOME[policy.action] if is_low_trust(policy, record) else "pass"
    if tool_calls and _SEVERITY.index(policy.unscored) > _SEVERITY.index(decided):
        decided = policy.unscored
    return decided


def in_sample(request_key: str, rate: float) -> bool:
    """Deterministic per request: the same id is always in or always out at a given rate."""
    if rate >= 1.0:
        return True
    if rate <= 0.0:
        return False
    bucket = int.from_bytes(hashlib.sha256(request_key.encode()).digest()[:8], "big") / 2**64
    return bucket < rate


def client_may_choose(policy: ClientModePolicy, configured: ScoringMode, requested: ScoringMode) -> bool:
    """Whether a client asking for ``requested`` gets it, where the operator configured ``configured``."""
    if policy == "any" or requested == configured:
        return True
    return policy == "lower" and _COST[requested] < _COST[configured]


def decide(
    settings: ScoringSettings,
    *,
    model: str,
    key_name: str,
    request_key: Callable[[], str],
    mode_header: ScoringMode | None,
    on_low_trust: LowTrust | None = None,
    key_policy: PolicySettings | None = None,
) -> Decision:
    """Mode and sampling: the key's own > per-key > per-model > global default (``configured_policy``); the
    header only within ``allow_client_mode``.

    ``request_key``: what the sample draw hashes (``in_sample``), asked for only when a request in a scored
    mode is sampled at a rate between 0 and 1. ``on_low_trust``: the key's policy on the model when the caller
    has it resolved already (``low_trust``). ``key_policy``: the policy a key made at run time carries.
    """
    configured = configured_policy(settings, model=model, key_name=key_name, key_policy=key_policy)
    mode, rate, timeout, policy = (
        configured.mode,
        configured.sample_rate,
        configured.sync_timeout_s,
        configured.allow_client_mode,
    )
    if on_low_trust is None:
        on_low_trust = low_trust(settings, model=model, key_name=key_name, key_policy=key_policy)
    refused: ScoringMode | None = None
    if mode_header is not None:
        # A policy that blocks or escalates is the operator's guard: a client may not lower its mode out of it.
        guarded = on_low_trust.acts and _COST[mode_header] < _COST[mode]
        if client_may_choose(policy, mode, mode_header) and not guarded:
            mode = mode_header
        else:
            refused = mode_header
    # A policy that acts on unscored answers scores every answer: one left out of the sample would be unscored.
    every = rate >= 1.0 or on_low_trust.unscored != "pass"
    sampled = mode != "off" and (every or (rate > 0.0 and in_sample(request_key(), rate)))
    return Decision(mode=mode, sync_timeout_s=timeout, sampled=sampled, refused_mode=refused, on_low_trust=on_low_trust)


def scoring_reachable(settings: ScoringSettings, key_policies: Sequence[PolicySettings] = ()) -> bool:
    """Whether ``decide`` can score any request: some key on some model group is configured to score, or may
    ask for it with ``x-trustgate-mode``; ``key_policies``: those of keys made at run time, each tried as well.

    A gateway where no request can be scored (``scoring.mode: off`` and clients
    only allowed to lower it, the default) loads no scorer and starts no scoring
    worker: spaCy, the vectors and their processes would cost start time and
    memory for nothing. Asked of ``decide`` itself, for every per-model and
    per-key entry with and without the other and with each header, so that it
    can never disagree with what a request gets.
    """
    absent = max([*settings.per_model, *settings.per_key], default="") + "\0"  # a name no entry has
    models, keys = [*settings.per_model, absent], [*settings.per_key, absent]
    headers: list[ScoringMode | None] = [None, "async", "sync"]
    own: list[PolicySettings | None] = [None, *key_policies]
    return any(
        decide(
            settings, model=model, key_name=key, request_key=lambda: absent, mode_header=header, key_policy=policy
        ).mode
        != "off"
        for model in models
        for key in keys
        for header in headers
        for policy in own
    )


def skip_reason(answer: str | None, *, has_tool_calls: bool) -> str | None:
    """Why an answer has no content to score (only tool calls, or nothing at all), or None when it has some.

    Where triage does not run (it is off, or the request carried documents),
    this is the only reason an answer is not scored: content beside tool calls
    is scored, and so is a refusal (one that goes on to answer is an answer;
    triage, when on, tells a bare one apart).
    """
    if answer is not None and answer.strip():
        return None
    return "tool_calls" if has_tool_calls else "empty"


def within_limits(job: ScoringJob, limits: InputLimits) -> ScoringJob | None:
    """``job`` as scoring may read it: None when its answer is too long to score, else its question bounded.

    A question past ``max_question_chars`` keeps its end (where a long prompt
    asks its question), marked with "…".
    """
    if len(job.answer) > limits.max_answer_chars:
        return None
    if len(job.question) <= limits.max_question_chars:
        return job
    return job.model_copy(update={"question": "…" + job.question[-(limits.max_question_chars - 1) :]})
