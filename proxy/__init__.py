"""The HTTP gateway: configuration, authentication, upstream calls and the app.

Its public names, below, are what the applications on top (the evaluation app, the console) and the wiring
(``trustgate``) use: import them from ``proxy``, not from its modules. Nothing in ``proxy`` imports these names
from here: its modules import each other directly, so the import graph has no cycle.
"""

from .config.settings import (
    ENV_PREFIX,
    ConfigError,
    GatewaySettings,
    default_config_path,
    load_settings,
    settings_from_dict,
)
from .metric_labels import configured_labels
from .server.access_log import install_access_log_redaction
from .server.app import Mount, create_app
from .server.assembly import load_calibrator, open_parts, open_upstream_client
from .server.auth import MASTER, Caller
from .server.connections import raise_descriptor_limit, server_options
from .server.errors import NotFound
from .server.gateway import Gateway
from .server.log_format import LOG_FORMATS, LogFormat, configure_logging
from .trust.ask import ask_body, reply_from_completion
from .trust.calibration_routes import calibration_reports
from .trust.trust_list import SummaryQuery, list_records, parse_params, summarize_records
from .upstream.client import UpstreamClient
from .upstream.local_model import LocalUpstreamError, packaged_model_path
from .upstream.replies import parse_completion

__all__ = [
    "ENV_PREFIX",
    "LOG_FORMATS",
    "MASTER",
    "Caller",
    "ConfigError",
    "Gateway",
    "GatewaySettings",
    "LocalUpstreamError",
    "LogFormat",
    "Mount",
    "NotFound",
    "SummaryQuery",
    "UpstreamClient",
    "ask_body",
    "calibration_reports",
    "configure_logging",
    "configured_labels",
    "create_app",
    "default_config_path",
    "install_access_log_redaction",
    "list_records",
    "load_calibrator",
    "load_settings",
    "open_parts",
    "open_upstream_client",
    "packaged_model_path",
    "parse_completion",
    "parse_params",
    "raise_descriptor_limit",
    "reply_from_completion",
    "server_options",
    "settings_from_dict",
    "summarize_records",
]
