"""``trustgate serve`` on a config with a mistake: it does not start, and says in one line where and what."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import gateway_config

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def serve(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trustgate", "serve", "--config", str(config), "--port", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def test_a_misspelt_api_base_stops_serve_naming_the_file_the_key_and_the_name_meant(tmp_path: Path) -> None:
    config = gateway_config("http://127.0.0.1:1")
    params = config["model_list"][0]["litellm_params"]
    params["api_bse"] = params.pop("api_base")
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    done = serve(path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"trustgate: config {path}: model_list[0].litellm_params.api_bse: unknown key (did you mean api_base?)"
    ]


def test_a_yaml_error_stops_serve_naming_the_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("model_list:\n  - model_name: fake\n    litellm_params:\n      model: openai/x\n     api_base: h\n")
    done = serve(path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"trustgate: config {path}, line 5, column 6: expected <block end>, but found '<block mapping start>' "
        "(while parsing a block mapping at line 2)"
    ]
