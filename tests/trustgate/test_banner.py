"""The ready banner: where the gateway listens and what to paste, without leaking an operator's key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml

from proxy import default_config_path, load_settings, settings_from_dict
from tests.assets import DATA_DIR
from tests.conftest import MASTER_KEY, gateway_config
from tests.e2e.gateway_process import READY, free_port, serve_config
from tests.fake_upstream import FakeUpstream
from tests.scripted_models import scripted
from trustgate.banner import QUESTION, RULE, ready_banner


@pytest.mark.unit
def test_the_default_banner_shows_the_demo_key_a_curl_and_an_sdk_snippet() -> None:
    banner = ready_banner(load_settings(default_config_path(), {}), "127.0.0.1", 4000, default_config_path())
    assert "TrustGate is ready on http://127.0.0.1:4000" in banner
    assert "authorization: Bearer sk-trustgate-local" in banner
    assert "curl -s -D - http://127.0.0.1:4000/v1/chat/completions" in banner
    assert "x-trustgate-mode: sync" in banner and "x-trust-score" in banner
    assert 'OpenAI(base_url="http://127.0.0.1:4000/v1", api_key="sk-trustgate-local")' in banner
    assert "http://127.0.0.1:4000/v1/trust/" in banner


@pytest.mark.unit
def test_an_operator_key_is_never_printed(tmp_path: Path) -> None:
    """A key written into the config: the banner asks for it in a variable the commands then expand."""
    config = gateway_config("http://127.0.0.1:9")  # master key sk-test-master
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    banner = ready_banner(settings_from_dict(config, {}), "0.0.0.0", 8080, path)
    assert MASTER_KEY not in banner
    assert "First: export TRUSTGATE_KEY=<general_settings.master_key of your config>" in banner
    assert '-H "authorization: Bearer $TRUSTGATE_KEY"' in banner and 'api_key=os.environ["TRUSTGATE_KEY"]' in banner
    assert "http://127.0.0.1:8080" in banner  # a wildcard bind is reached on loopback


def _banner(output: list[str], timeout_s: float = 30.0) -> list[str]:
    """The banner's lines as printed, from the rule above "TrustGate is ready" to the rule below it (waiting for
    that rule: the gateway's output is read by another thread while the banner is still being written)."""
    deadline = time.monotonic() + timeout_s
    while True:
        lines = list(output)
        start = next((i - 1 for i, line in enumerate(lines) if line.startswith(READY)), None)
        end = (
            None if start is None else next((i for i in range(start + 2, len(lines)) if lines[i].strip() == RULE), None)
        )
        if start is not None and end is not None:
            return [line.rstrip("\n") for line in lines[start : end + 1]]
        assert time.monotonic() < deadline, f"no whole banner in the output: {lines}"
        time.sleep(0.05)


def _shell_command(banner: list[str], first: str) -> str:
    """The command whose first line starts with ``first``, with its continuation lines, as a user pastes it."""
    start = next(i for i, line in enumerate(banner) if line.strip().startswith(first))
    end = start
    while banner[end].endswith("\\"):
        end += 1
    return "\n".join(line.strip() for line in banner[start : end + 1])


def _bash(command: str, environ: dict[str, str]) -> str:
    done = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, timeout=60, env={**os.environ, **environ}, check=False
    )
    assert done.returncode == 0, f"{command}\n{done.stderr}"
    return done.stdout


def _curl_headers(banner: list[str], shell: dict[str, str]) -> dict[str, str]:
    """The banner's chat ``curl`` run as printed: its 200 response's header fields, names in lower case."""
    headers = _bash(_shell_command(banner, "curl -s -D -"), shell)
    status, *fields = headers.split("\n\n")[0].splitlines()  # text mode: curl's CRLFs read as \n
    assert status.split()[1] == "200", headers
    return dict(field.lower().split(": ", 1) for field in fields)


def _python_output(banner: list[str], shell: dict[str, str]) -> str:
    """What the banner's SDK snippet prints, run as printed (it must exit cleanly)."""
    python = textwrap.dedent("\n".join(banner[banner.index("From Python (pip install openai):") + 1 : -1]))
    printed = subprocess.run(
        [sys.executable, "-c", python],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **shell},
        check=False,
    )
    assert printed.returncode == 0, printed.stderr
    return printed.stdout


@pytest.fixture
def key_from_environment(tmp_path: Path, fake_upstream: FakeUpstream) -> Path:
    """A user's config: its master key read from TRUSTGATE_MASTER_KEY, on a free port, scored by
    consistency checks the fake upstream answers consistently."""
    if not (DATA_DIR / "consistency" / "vectors.bin").exists():
        pytest.skip("scoring assets not built: `make install` builds them")
    fake_upstream.responder = scripted(consistent=True)
    config = gateway_config(fake_upstream.url, general_settings={"master_key": "os.environ/TRUSTGATE_MASTER_KEY"})  # type: ignore[attr-defined]
    config["trustgate"] = {
        "server": {"port": free_port()},
        "store": {"path": str(tmp_path / "records.sqlite3")},
        "scoring": {
            "data_dir": str(DATA_DIR),
            "allow_client_mode": "any",
            "consistency": {"max_checks": 4},
            "factcheck": {"enabled": False},
        },
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.integration
def test_the_banner_commands_run_as_printed(key_from_environment: Path) -> None:
    """Started by TRUSTGATE_CONFIG alone, the gateway prints commands that bash runs as they stand: the key
    is the variable the config reads, in double quotes, never its value."""
    environ = {"TRUSTGATE_MASTER_KEY": MASTER_KEY, "TRUSTGATE_CONFIG": str(key_from_environment)}
    with serve_config(key_from_environment, environ=environ, timeout=120) as gateway:
        banner = _banner(gateway.output)
        assert MASTER_KEY not in "\n".join(banner)
        assert "$TRUSTGATE_KEY" not in "\n".join(banner) and "key: $TRUSTGATE_MASTER_KEY" in banner[1]
        shell = {"TRUSTGATE_MASTER_KEY": MASTER_KEY}
        found = _curl_headers(banner, shell)
        assert {"x-trust-score", "x-trust-label", "x-trust-id"} <= set(found), found
        record_command = _shell_command(banner, f"curl -s {gateway.url}/v1/trust/")
        record = json.loads(_bash(record_command.replace("TRUST_ID", found["x-trust-id"]), shell))
        assert record["id"] == found["x-trust-id"] and record["status"] == "done"
        assert f"record: {gateway.url}/v1/trust/" in _python_output(banner, shell)


@pytest.mark.e2e
def test_version_as_a_user_types_it() -> None:
    """`trustgate --version` names the installed distribution's version."""
    printed = _bash("trustgate --version", {"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"})
    assert printed.strip() == f"trustgate {version('trustgate')}"


@pytest.mark.e2e
def test_trustgate_config_names_the_config_and_config_overrides_it(tmp_path: Path) -> None:
    """What a container or a unit file sets, and what a user types over it."""
    shell = {"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    named = subprocess.run(
        ["bash", "-c", "TRUSTGATE_CONFIG=from-variable.yaml trustgate serve"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **shell},
        cwd=tmp_path,
        check=False,
    )
    assert named.returncode == 2 and "cannot read config from-variable.yaml" in named.stderr
    typed = subprocess.run(
        ["bash", "-c", "TRUSTGATE_CONFIG=from-variable.yaml trustgate serve --config typed.yaml"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **shell},
        cwd=tmp_path,
        check=False,
    )
    assert typed.returncode == 2 and "cannot read config typed.yaml" in typed.stderr


@pytest.mark.unit
def test_without_a_client_chosen_sync_mode_the_banner_does_not_promise_a_score(tmp_path: Path) -> None:
    """The default policy lets a client only lower scoring's mode: the banner then asks for no sync mode
    and reads only what an async response carries."""
    config = gateway_config("http://127.0.0.1:9", general_settings={"master_key": "os.environ/GATEWAY_KEY"})
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    banner = ready_banner(settings_from_dict(config, {"GATEWAY_KEY": "sk-x"}), "127.0.0.1", 4000, path)
    assert "x-trustgate-mode" not in banner and "x-trust-score" not in banner
    assert 'raw.headers["x-trust-status"]' in banner and '"authorization: Bearer $GATEWAY_KEY"' in banner
    assert 'api_key=os.environ["GATEWAY_KEY"]' in banner


@pytest.mark.integration
def test_with_scoring_off_the_banner_promises_no_trust_header_and_its_commands_run(
    tmp_path: Path, fake_upstream: FakeUpstream
) -> None:
    """``scoring.mode: off``, clients only allowed to lower it: the answer comes back without trust headers, so
    the commands read none (the async variant's ``raw.headers["x-trust-status"]`` would raise)."""
    config = gateway_config(fake_upstream.url, general_settings={"master_key": "os.environ/TRUSTGATE_MASTER_KEY"})  # type: ignore[attr-defined]
    config["trustgate"] = {
        "server": {"port": free_port()},
        "store": {"path": str(tmp_path / "records.sqlite3")},
        "scoring": {"mode": "off"},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    shell = {"TRUSTGATE_MASTER_KEY": MASTER_KEY}
    with serve_config(path, environ=shell, timeout=120) as gateway:
        banner = _banner(gateway.output)
        assert "scoring is off" in "\n".join(banner) and not any("x-trust" in line for line in banner)
        found = _curl_headers(banner, shell)
        assert not [name for name in found if name.startswith("x-trust-")], found
        assert QUESTION in _python_output(banner, shell)  # the fake upstream echoes the question


@pytest.mark.unit
@pytest.mark.parametrize(
    "scoring, promised",
    [
        ({"mode": "off"}, "scoring is off"),
        ({"mode": "off", "per_model": {"fake": {"mode": "async"}}}, "scored after the response"),
        ({"mode": "async", "per_key": {"master": {"mode": "off"}}}, "scoring is off"),
        ({"mode": "off", "per_model": {"fake": {"allow_client_mode": "any"}}}, "sync mode"),
    ],
)
def test_the_banner_promises_what_its_key_gets_on_its_model(
    tmp_path: Path, scoring: dict[str, object], promised: str
) -> None:
    """The policy's per-model and per-key entries count, as they do for the request the banner's curl makes."""
    config = gateway_config("http://127.0.0.1:9")
    config["trustgate"] = {"scoring": scoring}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    banner = ready_banner(settings_from_dict(config, {}), "127.0.0.1", 4000, path)
    assert promised in banner
