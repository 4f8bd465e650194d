"""``trustgate keys``: a key made, read, changed, listed and deleted from a shell, through a running gateway."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from proxy import settings_from_dict
from tests.conftest import gateway_config
from tests.fake_upstream import FakeUpstream
from tests.servers import ServerThread
from trustgate.cli import main
from trustgate.keys import gateway_url


def keys(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    """Run ``trustgate keys ...``: its exit status, its answer (JSON), what it wrote on stderr."""
    status = main(["keys", *argv])
    out, err = capsys.readouterr()
    return status, json.loads(out) if out.strip() else None, err


def chat(server: ServerThread, key: str) -> int:
    body = {"model": "fake", "messages": [{"role": "user", "content": "hi"}]}
    headers = {"authorization": f"Bearer {key}"}
    return httpx.post(f"{server.url}/v1/chat/completions", json=body, headers=headers, timeout=30).status_code


@pytest.mark.integration
def test_keys_are_managed_from_a_shell(
    fake_upstream: FakeUpstream,
    start_gateway: Callable[..., ServerThread],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    gateway = start_gateway(config)
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump(config))
    where = ["--config", str(path), "--url", gateway.url]

    status, made, _ = keys(
        capsys, *where, "generate", "--alias", "from-cli", "--model", "fake", "--rpm", "5", "--metadata", '{"a": 1}'
    )
    assert status == 0 and made["key_alias"] == "from-cli" and made["rpm_limit"] == 5 and made["metadata"] == {"a": 1}
    assert chat(gateway, made["key"]) == 200

    status, info, _ = keys(capsys, *where, "info", made["token"])
    assert status == 0 and info["info"]["models"] == ["fake"] and made["key"] not in json.dumps(info)
    status, changed, _ = keys(capsys, *where, "update", "--alias", "from-cli", "--rpm", "7", "--blocked")
    assert status == 0 and changed["rpm_limit"] == 7 and changed["status"] == "revoked"
    assert chat(gateway, made["key"]) == 401
    status, listed, _ = keys(capsys, *where, "list", "--full")
    assert status == 0 and [entry["key_alias"] for entry in listed["keys"]] == ["from-cli"]

    status, refused, err = keys(capsys, *where, "generate", "--alias", "master")
    assert status == 1 and refused is None and "409" in err and "master" in err
    status, deleted, _ = keys(capsys, *where, "delete", "--alias", "from-cli")
    assert status == 0 and deleted == {"deleted_keys": ["from-cli"]}
    status, missing, err = keys(capsys, *where, "info", made["token"])
    assert status == 1 and missing is None and "404" in err


@pytest.mark.integration
def test_keys_says_what_is_missing(
    fake_upstream: FakeUpstream, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    path = tmp_path / "gateway.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["keys", "--config", str(path), "--url", "http://127.0.0.1:9", "list"]) == 2
    assert "no gateway answered at http://127.0.0.1:9" in capsys.readouterr().err

    open_config = {**config, "general_settings": {}, "trustgate": {"allow_unauthenticated": True}}
    path.write_text(yaml.safe_dump(open_config))
    assert main(["keys", "--config", str(path), "list"]) == 2
    assert "no master_key" in capsys.readouterr().err


@pytest.mark.unit
@pytest.mark.parametrize(
    ("server", "url"),
    [
        ({"host": "0.0.0.0", "port": 4000}, "http://127.0.0.1:4000"),
        ({"host": "::", "port": 8080}, "http://[::1]:8080"),
        ({"host": "10.1.2.3", "port": 4001}, "http://10.1.2.3:4001"),
    ],
)
def test_the_gateway_is_found_where_its_config_serves(server: dict[str, Any], url: str) -> None:
    config = {**gateway_config("http://127.0.0.1:9"), "trustgate": {"server": server}}
    assert gateway_url(settings_from_dict(config, {})) == url
