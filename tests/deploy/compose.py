"""Just enough of Docker Compose's semantics to check deploy/docker-compose.yml statically:
variable interpolation and where each bind mount comes from."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

__all__ = ["Mount", "host_path", "interpolate", "mounts", "unescaped_dollars"]

# $$ (a literal $), ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?error}, ${NAME?error}, $NAME
_VARIABLE = re.compile(r"\$(?:(\$)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


def interpolate(value: str, environ: Mapping[str, str]) -> str:
    """Compose's interpolation of one string; a missing ``${NAME:?...}`` raises KeyError."""

    def replace(match: re.Match[str]) -> str:
        if match.group(1):
            return "$"
        name = match.group(2) or match.group(5)
        operator, argument = match.group(3), match.group(4) or ""
        present = environ.get(name)
        if operator in (":-", "-"):
            use_default = present is None or (operator == ":-" and present == "")
            return argument if use_default else str(present)
        if operator in (":?", "?") and (present is None or (operator == ":?" and present == "")):
            raise KeyError(f"{name}: {argument}")
        return present or ""

    return _VARIABLE.sub(replace, value)


def unescaped_dollars(value: str) -> bool:
    """Whether a string has a ``$`` that is not valid interpolation (Compose rejects it)."""
    return "$" in _VARIABLE.sub("", value)


@dataclass(frozen=True)
class Mount:
    source: str
    target: str
    bind: bool  # a host path (relative to the compose file), not a named volume


def mounts(service: Mapping[str, Any], environ: Mapping[str, str]) -> list[Mount]:
    found = []
    for entry in service.get("volumes", []):
        if isinstance(entry, str):
            source, target = interpolate(entry, environ).split(":")[:2]
        else:
            source, target = interpolate(entry["source"], environ), entry["target"]
        found.append(Mount(source, target, source.startswith((".", "/", "~"))))
    return found


def host_path(container_path: str, service: Mapping[str, Any], environ: Mapping[str, str]) -> str | None:
    """The bind-mount source (relative to the compose file) that a container path lies in."""
    path = PurePosixPath(container_path)
    for mount in mounts(service, environ):
        target = PurePosixPath(mount.target)
        if mount.bind and (path == target or target in path.parents):
            return str(PurePosixPath(mount.source) / path.relative_to(target))
    return None
