"""The label values a gateway's config names, so that its series can exist at zero from start-up.

A counter child that prometheus_client creates at its first event is scraped
first with the value 1 (or more), and ``rate()`` and ``increase()`` never see
that first step: a panel or an alert over a model's first shed job, scorer
error or low-trust action shows nothing. prometheus_client's documented
remedy is to create each child up front with ``.labels(...)``, which needs
every label value before the first request. The closed sets (trust labels,
statuses, reasons, actions) are the exporters' and scoring's own; what
depends on the config (model groups, keys, deployments, fallbacks, enabled
scorers, endpoints, whether answers are triaged) is read by whoever holds the settings and handed down in
this one typed value, so that exporters never read the gateway's config.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ConfiguredLabels"]


@dataclass(frozen=True)
class ConfiguredLabels:
    """What the config says each label may be. Empty (the default): nothing is created up front."""

    models: tuple[str, ...] = ()  # model groups
    # (key name, model group) for every key and each group it may use: the label pairs of a user's traffic
    callers: tuple[tuple[str, str], ...] = ()
    endpoints: tuple[str, ...] = ()  # the OpenAI endpoints served
    streamed_endpoints: tuple[str, ...] = ()  # those of them that stream
    components: tuple[str, ...] = ()  # the components a record can carry: enabled scorers, and "ov" when combined
    scorers: tuple[str, ...] = ()  # the enabled scorers: the purposes of scoring's upstream calls
    deployments: tuple[tuple[str, str], ...] = ()  # (model group, deployment as `group:place`)
    fallbacks: tuple[tuple[str, str], ...] = ()  # (group asked, group that may answer instead)
    kinds: tuple[str, ...] = ()  # the kinds triage tells apart, when it runs (``scoring.applicability``)
