"""The configuration reference, read from the config models themselves so that it cannot drift from them.

Every option of the YAML file is a field of a pydantic model reachable from ``GatewaySettings``: the
walk below finds each model once, with every place it sits in the file (``LowTrustPolicy`` sits under
``trustgate.scoring.on_low_trust`` and under each ``per_model`` / ``per_key`` entry), and each field's
type, default and description. The description is the field's ``FieldInfo.description``, however the
model gives it: ``Field(description=...)`` or an attribute docstring under ``use_attribute_docstrings``.
"""

from __future__ import annotations

import json
import re
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from proxy import GatewaySettings

__all__ = ["Option", "Section", "options", "reference_markdown", "sections", "undocumented"]

# Where a field is written in the file when that is not under its model's own key: the loader reads the
# master key from LiteLLM's ``general_settings`` (proxy.config.settings.settings_from_dict).
_WRITTEN_AT: dict[tuple[type[BaseModel], str], str] = {(GatewaySettings, "master_key"): "general_settings.master_key"}

_SIMPLE_TYPES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    Path: "path",
    SecretStr: "secret string",
    Any: "any value",
    type(None): "null",
}

# Bounds a field's metadata can carry (annotated_types), and how each reads.
_BOUNDS: tuple[tuple[type[Any], str, str], ...] = (
    (annotated_types.Ge, "ge", "≥ {}"),
    (annotated_types.Gt, "gt", "> {}"),
    (annotated_types.Le, "le", "≤ {}"),
    (annotated_types.Lt, "lt", "< {}"),
    (annotated_types.MinLen, "min_length", "at least {} characters"),
    (annotated_types.MaxLen, "max_length", "at most {} characters"),
)


@dataclass
class Section:
    """One config model and every YAML path it sits at (the first is where the reference lists it)."""

    model: type[BaseModel]
    paths: list[str] = field(default_factory=list)

    @property
    def heading(self) -> str:
        """The Markdown heading that lists it, with an id links can use."""
        path = self.paths[0]
        return f"## `{path}` {{#{self.anchor}}}" if path else f"## Top level {{#{self.anchor}}}"

    @property
    def anchor(self) -> str:
        """The heading's id: the path without its brackets (``per_model.<name>`` → ``per_model.name``)."""
        return re.sub(r"[^a-z0-9_.]", "", self.paths[0].lower()) or "top-level"


@dataclass(frozen=True)
class Option:
    """One field of a config model, at the YAML path where its section is listed."""

    section: Section
    name: str
    info: FieldInfo

    @property
    def path(self) -> str:
        written = _WRITTEN_AT.get((self.section.model, self.name))
        return written or _join(self.section.paths[0], self.name)

    @property
    def description(self) -> str:
        return (self.info.description or "").strip()


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _nested(annotation: Any) -> Iterator[tuple[type[BaseModel], str]]:
    """The config models a field's type holds, each with what its YAML path adds after the field's name."""
    origin, args = get_origin(annotation), get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation, ""
    elif origin in (Union, types.UnionType):
        for arg in args:
            yield from _nested(arg)
    elif origin is list:
        yield from ((model, f"[]{rest}") for model, rest in _nested(args[0]))
    elif origin is dict:
        yield from ((model, f".<name>{rest}") for model, rest in _nested(args[1]))


def sections(root: type[BaseModel] = GatewaySettings) -> list[Section]:
    """Every config model reachable from ``root``, in the order a reader of the file meets them."""
    found: dict[type[BaseModel], Section] = {}

    def visit(model: type[BaseModel], path: str) -> None:
        found.setdefault(model, Section(model)).paths.append(path)
        for name, info in model.model_fields.items():
            for nested, rest in _nested(info.annotation):
                visit(nested, _join(path, name) + rest)

    visit(root, "")
    return list(found.values())


def options(root: type[BaseModel] = GatewaySettings) -> list[Option]:
    """Every field of every config model, once each."""
    return [
        Option(section, name, info) for section in sections(root) for name, info in section.model.model_fields.items()
    ]


def undocumented(root: type[BaseModel] = GatewaySettings) -> list[str]:
    """The YAML paths of the options that carry no description."""
    return [option.path for option in options(root) if not option.description]


def _type_text(annotation: Any, titles: dict[type[BaseModel], Section]) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:  # a type with validators attached (ConfigPath): the type it validates
        return _type_text(args[0], titles)
    if origin is Literal:
        return "one of " + ", ".join(f"`{json.dumps(value)}`" for value in args)
    if origin in (Union, types.UnionType):
        return " or ".join(_type_text(arg, titles) for arg in args)
    if origin is list:
        return f"list of {_type_text(args[0], titles)}"
    if origin is dict:
        return f"map of {_type_text(args[0], titles)} to {_type_text(args[1], titles)}"
    if annotation in titles:
        return f"[section](#{titles[annotation].anchor})"
    return _SIMPLE_TYPES.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _bounds(info: FieldInfo) -> list[str]:
    found = []
    for item in info.metadata:
        found += [text.format(getattr(item, attr)) for kind, attr, text in _BOUNDS if isinstance(item, kind)]
        if getattr(item, "pattern", None):
            found.append(f"matching `{item.pattern}`")
    return found


def _default_text(option: Option, titles: dict[type[BaseModel], Section]) -> str:
    if option.info.is_required():
        return "required"
    value = option.info.get_default(call_default_factory=True)
    if isinstance(value, BaseModel) and type(value) in titles:
        return "its section's defaults"
    if isinstance(value, Path):
        value = str(value)
    return f"`{json.dumps(value, ensure_ascii=False)}`"


def _cell(text: str) -> str:
    """Text for one cell of a Markdown table: one line, its pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _section_markdown(section: Section, titles: dict[type[BaseModel], Section]) -> list[str]:
    lines = [section.heading, ""]
    if len(section.paths) > 1:
        lines += ["Also at " + ", ".join(f"`{path}`" for path in section.paths[1:]) + ".", ""]
    if section.model.__doc__:
        lines += [" ".join(section.model.__doc__.split()), ""]
    lines += ["| option | type | default | description |", "|---|---|---|---|"]
    for name, info in section.model.model_fields.items():
        option = Option(section, name, info)
        kind = ", ".join([_type_text(info.annotation, titles), *_bounds(info)])
        cells = [f"`{option.path}`", kind, _default_text(option, titles), option.description]
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return [*lines, ""]


def reference_markdown(root: type[BaseModel] = GatewaySettings) -> str:
    """The reference as Markdown: one section per config model, one table row per option."""
    found = sections(root)
    titles = {section.model: section for section in found}
    return "\n".join(line for section in found for line in _section_markdown(section, titles))
