"""What a gateway hands its local scoring worker at start, over the child's stdin (never a command line or a file:
the settings carry the config's secrets)."""

from __future__ import annotations

from dataclasses import dataclass

from ..base.log_format import LogFormat
from ..config.settings import GatewaySettings

__all__ = ["StartOrder"]


@dataclass(frozen=True)
class StartOrder:
    """The settings (secrets included) and how to log."""

    settings: GatewaySettings
    log_format: LogFormat
