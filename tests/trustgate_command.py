"""``trustgate`` as the evaluation tests run it: the CLI with the evaluation app's ``eval`` handed over by hand.

The CLI finds ``eval`` through the ``trustgate.commands`` entry point, which
it reads from the installed metadata; an editable install made before that
entry point was declared lacks it until reinstalled. Handed over, as
``create_app(mounts=...)`` takes the console, the checkout's own ``eval`` runs
whatever the install says. tests/trustgate/test_commands.py checks the
declaration and that the CLI offers what is declared.
"""

from __future__ import annotations

from collections.abc import Sequence

from evaluation.subcommand import add_eval_command
from trustgate import cli


def main(argv: Sequence[str]) -> int:
    return cli.main(argv, commands=[add_eval_command])
