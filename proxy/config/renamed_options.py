"""TrustGate options that changed their name: the old names still read, with a warning naming the new one.

Every option of TrustGate's own that is a time is named for its unit, seconds
(``_s``), so that no reader has to guess whether ``timeout: 5`` means seconds
or milliseconds. A config written with an old name keeps working: the value
moves to the new name (converted to seconds where the old unit was another),
and one warning per option names the new name and the value to write. A
config that gives both names for one option is refused: which of the two it
means cannot be known. LiteLLM's own names (``router_settings``,
``litellm_params``) keep LiteLLM's spelling, so they are not here.

Each model names its old options in its ``old_names`` (``scoring.settings.Renamed``),
so an option is found wherever its model appears: ``sync_timeout`` in
``trustgate.scoring`` and in every ``per_model`` and ``per_key`` entry alike.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel

from scoring import Renamed

__all__ = ["RenamedOption", "RenamedOptionError", "renamed_options"]


class RenamedOptionError(ValueError):
    """A config names one option twice (old and new name), or gives an old name a value it cannot convert."""


@dataclass(frozen=True)
class RenamedOption:
    """One old name a config used: its path, the new name's path, and the value now under the new name."""

    old: str
    new: str
    value: Any
    converted_from: str | None = None  # the old value and unit, where the value was converted to seconds

    def warning(self) -> str:
        value = f"{self.value:g}" if isinstance(self.value, float) else repr(self.value)
        converted = f" ({self.converted_from})" if self.converted_from else ""
        return f"{self.old} is deprecated: write {self.new}: {value}{converted} instead"


def renamed_options(data: Any, model: type[BaseModel], path: str) -> tuple[Any, list[RenamedOption]]:
    """``data`` (a config mapping read as ``model``) with every old name moved to its new one, and the moves made.

    ``data`` itself is left as it was; what is not a mapping is returned as is, for the model to refuse.
    """
    found: list[RenamedOption] = []
    return _model(data, model, path, found), found


def _model(data: Any, model: type[BaseModel], path: str, found: list[RenamedOption]) -> Any:
    if not isinstance(data, Mapping):
        return data
    moved = dict(data)
    old_names: Mapping[str, Renamed] = getattr(model, "old_names", {})
    for old, renamed in old_names.items():
        if old not in moved:
            continue
        if renamed.new in moved:
            raise RenamedOptionError(
                f"{path}.{old} and {path}.{renamed.new} are one option ({old} is its old name): keep {renamed.new}"
            )
        given = moved.pop(old)
        value = _converted(given, renamed, f"{path}.{old}")
        converted = f"{given} {renamed.unit}" if value is not given else None
        moved[renamed.new] = value
        found.append(RenamedOption(f"{path}.{old}", f"{path}.{renamed.new}", value, converted))
    for name, field in model.model_fields.items():
        if name in moved:
            moved[name] = _value(moved[name], field.annotation, f"{path}.{name}", found)
    return moved


def _value(value: Any, annotation: Any, path: str, found: list[RenamedOption]) -> Any:
    """``value`` read as ``annotation``: a model, a mapping or list of models, or either of them or None."""
    origin = get_origin(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _model(value, annotation, path, found)
    if origin in (Union, types.UnionType):
        models = [arg for arg in get_args(annotation) if isinstance(arg, type) and issubclass(arg, BaseModel)]
        return _model(value, models[0], path, found) if len(models) == 1 else value
    if origin is dict and isinstance(value, Mapping):
        item = get_args(annotation)[1]
        return {key: _value(entry, item, f"{path}.{key}", found) for key, entry in value.items()}
    if origin is list and isinstance(value, list):
        item = get_args(annotation)[0]
        return [_value(entry, item, f"{path}[{index}]", found) for index, entry in enumerate(value)]
    return value


def _converted(value: Any, renamed: Renamed, path: str) -> Any:
    """The old name's value in seconds; a value that is no number is left for the new name's validation."""
    if renamed.seconds_per_unit == 1.0 or value is None or isinstance(value, bool):
        return value
    try:
        return float(value) * renamed.seconds_per_unit
    except (TypeError, ValueError):
        raise RenamedOptionError(f"{path}: must be a number of {renamed.unit}, not {value!r}") from None
