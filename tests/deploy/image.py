"""deploy/Dockerfile read as the container runtime reads it: instructions, the final stage's
ENV, WORKDIR and ENTRYPOINT, and build arguments' defaults."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass

from tests.deploy.promql import DEPLOY

__all__ = ["DOCKERFILE", "PINNED_IMAGE", "Image", "image", "instructions"]

DOCKERFILE = DEPLOY / "Dockerfile"
# A released version, never a floating tag (latest, a bare major): image:MAJOR.MINOR[.PATCH][-suffix].
PINNED_IMAGE = re.compile(r"[a-z0-9./-]+:v?\d+\.\d+(\.\d+)?(-[a-z0-9.-]+)?(@sha256:[0-9a-f]{64})?")


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) for every instruction, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


@dataclass(frozen=True)
class Image:
    """What a container of the final stage starts with."""

    base: str  # the FROM of the final stage, build arguments expanded
    env: dict[str, str]
    workdir: str
    entrypoint: list[str]
    runs: list[str]  # the final stage's RUN commands
    healthcheck: str


def image() -> Image:
    args: dict[str, str] = {}
    stages: list[list[tuple[str, str]]] = []
    for op, value in instructions():
        if op == "ARG" and not stages:
            name, _, default = value.partition("=")
            args[name] = default
        elif op == "FROM":
            stages.append([(op, value)])
        elif stages:
            stages[-1].append((op, value))
    final = stages[-1]
    base = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], final[0][1].split()[0])
    env: dict[str, str] = {}
    for op, value in final:
        if op == "ENV":
            for pair in shlex.split(value):
                name, _, setting = pair.partition("=")
                env[name] = setting
    (workdir,) = [value for op, value in final if op == "WORKDIR"][-1:]
    (entrypoint,) = [json.loads(value) for op, value in final if op == "ENTRYPOINT"]
    (healthcheck,) = [value for op, value in final if op == "HEALTHCHECK"]
    return Image(
        base=base,
        env=env,
        workdir=workdir,
        entrypoint=entrypoint,
        runs=[value for op, value in final if op == "RUN"],
        healthcheck=healthcheck,
    )
