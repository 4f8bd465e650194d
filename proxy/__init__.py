"""The HTTP gateway: configuration, authentication, upstream calls and the app.

Its rooms are layered, each importing only those below it (``tests/test_architecture.py``, docs/architecture.md):
``base`` < ``config`` < ``upstream`` < ``trust`` < ``server`` < ``endpoints``. On top of them, in this package's
root, each process is assembled from its parts: the gateway's app (``app``), the parts every process opens
(``assembly``), the local scoring worker's process (``local_worker``) and ``trustgate calibrate``'s refit
(``calibrate``); no room imports them.

Its public names, below, are what the applications on top (the evaluation app, the console) and the wiring
(``trustgate``) use: import them from ``proxy``, not from its modules. Nothing in ``proxy`` imports these names
from here: its modules import each other directly, so the import graph has no cycle.
"""

from .app import Mount, create_app
from .assembly import load_calibrator, open_parts, open_upstream_client
from .base.errors import NotFound
from .base.log_format import LOG_FORMATS, LogFormat, configure_logging
from .config.settings import (
    ENV_PREFIX,
    ConfigError,
    GatewaySettings,
    default_config_path,
    load_settings,
    read_config,
    settings_from_dict,
    with_current_names,
)
from .metric_labels import configured_labels
from .server.access_log import install_access_log_redaction
from .server.auth import MASTER, Caller
from .server.calibration_routes import calibration_standings
from .server.connections import raise_descriptor_limit, server_options
from .server.gateway import Gateway
from .server.trust_list import SummaryQuery, list_records, parse_params, summarize_records
from .trust.ask import ask_body, reply_from_completion
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
    "calibration_standings",
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
    "read_config",
    "reply_from_completion",
    "server_options",
    "settings_from_dict",
    "summarize_records",
    "with_current_names",
]
