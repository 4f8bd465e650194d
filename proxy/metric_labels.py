"""The label values this config names, for the gateway's and workers' series to start at zero.

Exporters never read the gateway's config (``exporters.metric_labels`` says
why the values are needed); this reads it once, where each process is
assembled (the gateway's app, ``trustgate worker``), from the config and the
endpoints the gateway serves.
"""

from __future__ import annotations

from exporters import ConfiguredLabels
from scoring import ANSWER_KINDS, scoring_reachable
from scoring.assembly import enabled_components
from scoring.pipeline import COMBINED

from .config.settings import GatewaySettings
from .endpoints.specs import CHAT, COMPLETIONS, EMBEDDINGS, RESPONSES
from .server.auth import ANONYMOUS, MASTER

__all__ = ["configured_labels"]


def configured_labels(settings: GatewaySettings) -> ConfiguredLabels:
    groups = settings.model_groups()
    scorers = enabled_components(settings.trustgate.scoring)
    specs = (CHAT, COMPLETIONS, RESPONSES, EMBEDDINGS)
    return ConfiguredLabels(
        models=tuple(groups),
        callers=_callers(settings, tuple(groups)),
        endpoints=tuple(spec.name for spec in specs),
        streamed_endpoints=tuple(spec.name for spec in specs if spec.tap is not None),
        components=scorers + (("ov",) if COMBINED & set(scorers) else ()),
        scorers=scorers,
        deployments=tuple(
            (group, f"{group}:{place}") for group, entries in groups.items() for place in range(len(entries))
        ),
        fallbacks=_fallbacks(settings),
        kinds=ANSWER_KINDS if _triages(settings) else (),
    )


def _triages(settings: GatewaySettings) -> bool:
    """Whether the gateway triages answers: it scores some, and triage is on."""
    scoring = settings.trustgate.scoring
    return scoring.applicability.enabled and scoring_reachable(scoring)


def _callers(settings: GatewaySettings, groups: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """Each key's name with each group it may use (an alias it lists stands for its group)."""
    aliases = settings.router_settings.aliases()
    pairs = [
        (key.name, group)
        for key in settings.trustgate.keys
        for group in (groups if key.models is None else dict.fromkeys(aliases.get(m, m) for m in key.models))
    ]
    if settings.master_key is not None:
        pairs += [(MASTER, group) for group in groups]
    if settings.trustgate.allow_unauthenticated and settings.master_key is None and not settings.trustgate.keys:
        pairs += [(ANONYMOUS, group) for group in groups]  # the gateway is open (``auth.KeyRing.open``)
    return tuple(pairs)


def _fallbacks(settings: GatewaySettings) -> tuple[tuple[str, str], ...]:
    router, aliases = settings.router_settings, settings.router_settings.aliases()
    pairs = {
        (aliases.get(asked, asked), aliases.get(answered, answered))
        for kind in ("fallbacks", "context_window_fallbacks", "content_policy_fallbacks")
        for entry in getattr(router, kind)
        for asked, targets in entry.items()
        for answered in targets
    }
    return tuple(sorted(pairs))
