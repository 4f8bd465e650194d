"""litellm, imported once per process and settled before anything of it runs: no network, no banner, our logs.

Two rooms import litellm: the upstream room calls it (``upstream.litellm_backend``)
and the config room reads its option names (``config.litellm_options``). Both take it
from here, so that whichever imports it first, it never fetches its price map from
the internet at import, prints no debug text and sends no telemetry, and its lines
go through the process's one log handler (``log_format``).
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from .log_format import route_litellm_logs_to_root

__all__ = ["imported_litellm"]


def imported_litellm() -> Any:
    """The litellm module, its module settings set (each call sets them again: litellm never unsets them).

    Typed ``Any``: litellm sets most of its module attributes at run time, where a type checker cannot see them.
    """
    # Without this, litellm fetches its model price map from the internet at import.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    # litellm's Responses bridge puts a plain dict where its model declares ResponseAPIUsage, and pydantic says
    # so when litellm dumps the model: nothing an operator can act on (the gateway reads the usage itself).
    # pyproject's filterwarnings names it too, for the tests, where pytest's filters come first.
    warnings.filterwarnings(
        "ignore",
        r"Pydantic serializer warnings.\s+PydanticSerializationUnexpectedValue\(Expected `ResponseAPIUsage`",
        UserWarning,
        "pydantic.main",
    )
    litellm.suppress_debug_info = True
    litellm.telemetry = False
    route_litellm_logs_to_root()  # one line per event, in the process's log format
    return litellm
