"""``Gateway``: the parts a request handler works with, built once per app by its lifespan (``app``).

Its own module so that everything a handler calls (the pipeline, the trust
list, low-trust actions) can name it without importing the app that builds it.
"""

from __future__ import annotations

from dataclasses import dataclass

from exporters import GatewayMetrics, Telemetry
from exporters.calibration_metrics import CalibrationMetrics
from scoring import FitStore

from ..base.limits import Limiter
from ..config.settings import GatewaySettings
from ..trust.refits import Refits
from ..trust.service import TrustService
from ..upstream.client import DeploymentHealth, UpstreamClient
from .auth import KeyRing
from .cached_probe import CachedProbe
from .key_management import KeyManager
from .readiness import ReadinessCheck
from .spending import Spending

__all__ = ["Gateway"]


@dataclass
class Gateway:
    """What a request handler needs, set on ``app.state.gateway`` by the lifespan."""

    settings: GatewaySettings
    keys: KeyRing
    upstream: UpstreamClient
    metrics: GatewayMetrics
    trust: TrustService
    telemetry: Telemetry
    readiness: ReadinessCheck
    limits: Limiter
    calibration_metrics: CalibrationMetrics
    health: CachedProbe[list[DeploymentHealth]]  # LiteLLM's /health: every deployment called, results reused
    spending: Spending
    # None: the gateway does not learn from feedback (feedback.learn: false)
    fits: FitStore | None = None  # the learned fits, beside the records they were learned from
    refits: Refits | None = None  # counts labels and runs refits in a process of their own
    key_manager: KeyManager | None = None  # None: no keys are made at run time (trustgate.generated_keys)
