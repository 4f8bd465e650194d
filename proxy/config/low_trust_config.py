"""Load-time checks of ``trustgate.scoring.on_low_trust``: a policy that could never act as written is refused.

An action needs the verdict before the response leaves, so it needs sync
scoring wherever it applies; on Trust_OV it acts only on answers the gateway
does not label trusted (``below`` at most ``trusted_threshold``); an
escalation needs a target the config serves and that every key the policy
covers may use (escalation never widens a key's model list). Each (model
group, key) pair is resolved exactly as a request would be
(``scoring.policy``), so per-model and per-key overrides are checked as they
combine.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from scoring import LowTrust, PolicySettings, ScoringSettings, low_trust, resolved_mode

__all__ = ["low_trust_problem"]


def low_trust_problem(
    scoring: ScoringSettings,
    groups: Collection[str],
    aliases: Mapping[str, str],
    keys: Mapping[str, Collection[str] | None],
    key_policies: Mapping[str, PolicySettings] | None = None,
    where: str = "trustgate.scoring.on_low_trust",
) -> str | None:
    """The first reason the config's low-trust policy cannot be applied as written; None when it can.

    Given the config's parts, not ``GatewaySettings``, which calls it while it validates itself (so neither
    module imports the other back): its model groups, its aliases (alias → group) and each key's name with the
    models it may use (None: all). ``key_policies``: the policies keys made at run time carry, by key name,
    each over the config's levels as a request resolves it; ``where``: the policy's place, as the message names it.
    """
    own = key_policies or {}
    # Who may ask: each configured key, and callers without a per-key entry (the master key, an open gateway).
    names: list[str | None] = [None, *keys, *(name for name in scoring.per_key if name not in keys)]
    for group in groups:
        for name in names:
            key_policy = own.get(name) if name is not None else None
            policy = low_trust(scoring, model=group, key_name=name, key_policy=key_policy)
            if not policy.acts:
                continue
            who = f"model `{group}`" + (f", key `{name}`" if name is not None else "")
            if policy.on == "score" and policy.below > scoring.trusted_threshold:
                return (
                    f"{where}.below ({policy.below:g}) for {who} must be at most "
                    f"trusted_threshold ({scoring.trusted_threshold:g}): action {policy.action} would act on answers "
                    "the gateway labels trusted"
                )
            mode = resolved_mode(scoring, model=group, key_name=name, key_policy=key_policy)
            if mode == "async":  # off: nothing is scored, so nothing is acted on; that is no contradiction
                return (
                    f"{where}: {_acting(policy)} for {who} needs sync scoring "
                    f"(the verdict must exist before the response leaves), but that scoring mode is {mode}"
                )
            if "escalate" not in (policy.action, policy.unscored):
                continue
            target = policy.escalate_to
            if target is None:
                escalates = "action escalate" if policy.action == "escalate" else "unscored: escalate"
                return f"{where}: {escalates} for {who} needs escalate_to"
            if target not in groups and target not in aliases:
                return f"{where}.escalate_to: unknown model group `{target}` (for {who})"
            if aliases.get(target, target) == group:  # the target's own answers are annotated only
                continue
            allowed = keys.get(name) if name is not None else None
            if allowed is not None and target not in allowed and aliases.get(target, target) not in allowed:
                return (
                    f"{where}.escalate_to: key `{name}` may not use `{target}` "
                    f"(not in its models), so it cannot escalate model `{group}` there"
                )
    return None


def _acting(policy: LowTrust) -> str:
    """What makes ``policy`` act, as the config says it."""
    if policy.action != "annotate":
        return f"action {policy.action}"
    return f"unscored: {policy.unscored}" if policy.unscored != "pass" else f"not_applicable: {policy.not_applicable}"
