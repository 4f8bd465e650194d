"""Apps add their sub-commands to ``trustgate`` by entry point: the CLI offers them without importing an app."""

from __future__ import annotations

import tomllib
from importlib import import_module
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from evaluation.subcommand import add_eval_command
from trustgate import cli

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def test_the_declared_eval_command_is_the_evaluation_apps() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    target = project["project"]["entry-points"]["trustgate.commands"]["eval"]
    module, _, attribute = target.partition(":")
    assert getattr(import_module(module), attribute) is add_eval_command
    assert project["project"]["scripts"]["trustgate"] == "trustgate.cli:main"


def test_the_cli_offers_the_installed_commands(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    declared = [EntryPoint(name="eval", value="evaluation.subcommand:add_eval_command", group="trustgate.commands")]
    monkeypatch.setattr(cli, "entry_points", lambda group: declared if group == "trustgate.commands" else [])
    assert cli.installed_commands() == [add_eval_command]
    with pytest.raises(SystemExit) as shown:
        cli.main(["eval", "run", "--help"])
    assert shown.value.code == 0
    assert "--dataset" in capsys.readouterr().out


def test_without_the_app_there_is_no_eval_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A gateway installed without the evaluation app (or any app) still runs: ``eval`` is simply not offered."""
    monkeypatch.setattr(cli, "entry_points", lambda group: [])
    with pytest.raises(SystemExit) as refused:
        cli.main(["eval", "run"])
    assert refused.value.code == 2
    assert "invalid choice: 'eval'" in capsys.readouterr().err
    assert cli.main(["model-path"]) == 0
