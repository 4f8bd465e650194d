"""The HTTP gateway: configuration, authentication, upstream calls and the app."""

from .app import create_app
from .gateway import Gateway
from .config import ConfigError, GatewaySettings, default_config_path, load_settings, settings_from_dict
from .upstream import UpstreamClient

__all__ = [
    "ConfigError",
    "Gateway",
    "GatewaySettings",
    "UpstreamClient",
    "create_app",
    "default_config_path",
    "load_settings",
    "settings_from_dict",
]
