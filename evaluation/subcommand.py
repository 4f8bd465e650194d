"""``trustgate eval`` as the ``trustgate`` command adds it: pyproject.toml registers ``add_eval_command``
under the ``trustgate.commands`` entry point, so the command offers ``eval`` without importing this app by name.

The arguments come from ``cli.py`` (light: read at every start of ``trustgate``); the work, and the
scientific libraries of the ``eval`` extra, are imported only when ``eval`` runs.
"""

from __future__ import annotations

import argparse
import sys

from .cli import add_eval_arguments

__all__ = ["add_eval_command"]


def add_eval_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``eval`` to the ``trustgate`` command's sub-commands."""
    evaluation = commands.add_parser("eval", help="measure how well trust scores predict correctness on labeled data")
    add_eval_arguments(evaluation)
    evaluation.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    try:
        from .command import run_eval_command
    except ModuleNotFoundError as exc:  # the gateway's own install (a container image) leaves the app's extras out
        print(
            f"trustgate eval: needs the `eval` extra ({exc.name} is not installed): pip install 'trustgate[eval]'",
            file=sys.stderr,
        )
        return 2
    return run_eval_command(args)
