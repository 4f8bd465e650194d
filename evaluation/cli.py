"""``trustgate eval``'s arguments. Imports nothing heavy: the ``trustgate`` command builds its parser from this
at every start, and the work itself is imported only when ``eval`` runs (``command.py``)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from .datasets import BUILT_DATASETS, CAPITALS_DATASET, DATASET_FILES

__all__ = ["add_eval_arguments", "command_line"]


def _positive_int(text: str) -> int:
    """An argparse type: a count of at least 1, refused at the command line rather than deep in a run."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not at least 1")
    return value


def _gateway_and_output(parser: argparse.ArgumentParser) -> None:
    """Where the models are and where the results go: every task takes these."""
    parser.add_argument("--config", type=Path, help="gateway YAML config (default: the embedded local-model config)")
    parser.add_argument("--model", help="model group under evaluation (default: the config's first)")
    parser.add_argument(
        "--cache",
        type=Path,
        help="SQLite cache of replies and results (default: <data_dir>/eval/cache.sqlite3); reruns resume from it",
    )
    parser.add_argument("--out", type=Path, help="report folder (default: <data_dir>/eval/reports/<run>)")
    parser.add_argument("--concurrency", type=_positive_int, default=1, help="items in flight (1 suits a local model)")
    parser.add_argument("--title", help="report title")
    parser.add_argument("--note", action="append", default=[], help="a line for the report's caveats (repeatable)")


def _common(parser: argparse.ArgumentParser) -> None:
    """The labeled-set tasks: which set, which sample, how the statistics are seeded."""
    parser.add_argument("--data-dir", type=Path, help="folder of the labeled sets (default: ../shared/eval)")
    parser.add_argument("--file", type=Path, help="a dataset file to read instead (required for jsonl)")
    parser.add_argument("--limit", type=_positive_int, help="evaluate a seeded sample of this many questions")
    parser.add_argument("--sample-seed", type=int, default=0, help="seed of that sample (default 0)")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples per interval")
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of bootstrap, calibration split and Trust_BC (default 0; Trust_BC keeps the "
        "config's consistency.seed where it sets one, so its checks are the gateway's)",
    )
    _gateway_and_output(parser)


def _rag_arguments(rag: argparse.ArgumentParser) -> None:
    rag.add_argument(
        "--file",
        type=Path,
        required=True,
        help="JSONL of RAG cases: question, documents, answer; optional id, answerable, reference_claims",
    )
    _gateway_and_output(rag)


def _run_arguments(run: argparse.ArgumentParser) -> None:
    run.add_argument(
        "--dataset",
        default="mixedqa",
        choices=[*DATASET_FILES, *BUILT_DATASETS, "jsonl"],
        help="capitals: built from packaged WordNet, a set the local demo model gets about half right; "
        "shortfacts: chemical symbols, currencies and creators of works, from packaged WordNet and Wikipedia",
    )
    run.add_argument(
        "--mode",
        default="answer",
        choices=["answer", "given"],
        help="answer: the model answers each question, then the full TrustScore; "
        "given: score the dataset's own answers",
    )
    run.add_argument("--answers", default="gpt", help="given mode on MixedQA: whose answers, e.g. flan,llama,gpt")
    run.add_argument(
        "--components",
        help="scorers to run, e.g. bc,fc,lp (default: answer mode bc,fc; given mode fc);"
        " bc_paper / fc_text: Trust_BC / Trust_FC by the paper's procedure beside the configured one",
    )
    run.add_argument("--bc-mode", choices=["binary", "graded", "adaptive"], help="Trust_BC stop rule (default: config)")
    run.add_argument("--max-checks", type=_positive_int, help="Trust_BC checks per answer (default: config)")
    run.add_argument("--bc-procedure", choices=["paper", "debiased"], help="Trust_BC procedure (default: config)")
    run.add_argument("--fc-judge", choices=["text", "choice"], help="Trust_FC judge procedure (default: config)")
    run.add_argument(
        "--no-verbal-confidence",
        dest="verbal_confidence",
        action="store_false",
        help="skip the verbalised-confidence baseline (answer mode)",
    )
    run.add_argument(
        "--no-logprobs",
        dest="logprobs",
        action="store_false",
        help="do not ask for the answer's log-probabilities (for upstreams that refuse them)",
    )
    run.add_argument("--calibration-out", type=Path, help="write the fitted Trust_OV calibration here (JSON)")
    run.add_argument(
        "--calibration-method",
        default="isotonic",
        choices=["isotonic", "platt", "logistic"],
        help="isotonic / platt: a map of the Trust_OV value; logistic: the fitted Trust_OV "
        "(for `combine: fitted`), a logistic regression over the components' features",
    )
    run.add_argument("--calibration-fit", type=float, default=0.5, help="fraction of items to fit on (rest: held out)")
    _common(run)


def _replay_arguments(replay: argparse.ArgumentParser) -> None:
    replay.add_argument(
        "--upstream",
        choices=["config", "capable"],
        default="config",
        help="config: the config's model (default: the embedded local model); capable: a scripted "
        "capable model whose Trust_BC and Trust_FC track correctness and its lp does not",
    )
    replay.add_argument("--dataset", default=CAPITALS_DATASET, choices=[CAPITALS_DATASET, "jsonl"])
    replay.add_argument("--components", default="bc,fc,lp", help="scorers the gateway runs (default bc,fc,lp)")
    replay.add_argument("--max-checks", type=_positive_int, help="Trust_BC checks per answer (default: config)")
    replay.add_argument("--refit-every", type=_positive_int, default=25, help="feedback.refit_every (default 25)")
    replay.add_argument("--min-labels", type=_positive_int, default=50, help="feedback.min_labels (default 50)")
    replay.add_argument("--data-dir", type=Path, help="folder of the labeled sets (default: ../shared/eval)")
    replay.add_argument("--file", type=Path, help="a dataset file to read instead (required for jsonl)")
    replay.add_argument("--limit", type=_positive_int, help="replay a seeded sample of this many questions")
    replay.add_argument("--sample-seed", type=int, default=0, help="seed of that sample (default 0)")
    replay.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples per interval")
    replay.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and of the scripted model")
    replay.add_argument("--config", type=Path, help="gateway YAML config (default: the embedded local-model config)")
    replay.add_argument("--model", help="model group under evaluation (default: the config's first)")
    replay.add_argument("--out", type=Path, help="report folder (default: <data_dir>/eval/reports/replay-...)")
    replay.add_argument("--title", help="report title")
    replay.add_argument("--note", action="append", default=[], help="a line for the report (repeatable)")


def _claims_arguments(claims: argparse.ArgumentParser) -> None:
    claims.add_argument(
        "--file", type=Path, required=True, help="a long-answer set (docs/eval/claims/long-answers.jsonl)"
    )
    claims.add_argument("--max-claims", type=_positive_int, help="claims.max_claims (default: the scoring default)")
    claims.add_argument("--checks-per-claim", type=_positive_int, help="claims.checks_per_claim (default: the default)")
    claims.add_argument("--whole", action="store_true", help="check every answer whole (claims.enabled: false)")
    claims.add_argument("--out", type=Path, help="report folder (default: <data_dir>/eval/reports/claims-...)")
    claims.add_argument("--title", help="report title")


def _triage_arguments(triage: argparse.ArgumentParser) -> None:
    triage.add_argument(
        "--file",
        type=Path,
        action="append",
        help="a JSONL set of requests with answers and gold kinds (repeatable; default: both committed sets)",
    )
    triage.add_argument("--repeat", type=_positive_int, default=5, help="timed runs per answer (median kept)")
    triage.add_argument("--json", type=Path, help="also write every figure here as JSON")


TASKS = {
    "run": ("how well trust scores predict correctness on a labeled set", _run_arguments),
    "truthfulqa-mc": ("TruthfulQA MC1/MC2 from log-probabilities (copy task)", _common),
    "rag": ("Trust-Eval's report (refusals, citations, claims) over a JSONL of RAG cases", _rag_arguments),
    "replay": (
        "feedback replay: label half a set through a real gateway, let it refit, measure the rest",
        _replay_arguments,
    ),
    "claims": (
        "long answers with planted false claims, checked claim by claim by a gateway before a truthful upstream",
        _claims_arguments,
    ),
    "triage": ("which answers triage finds checkable, on labelled requests with answers", _triage_arguments),
}


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    """``trustgate eval run``, ``truthfulqa-mc``, ``rag``, ``replay``, ``claims`` and ``triage``, each with its own
    arguments (``TASKS``)."""
    tasks = parser.add_subparsers(dest="eval_task", required=True)
    for name, (help_text, add) in TASKS.items():
        add(tasks.add_parser(name, help=help_text))


def command_line(args: argparse.Namespace) -> str:
    """The ``trustgate eval`` command that gives ``args``: its task, then each option not at its default.

    Reports print it at the top, one option per line. It is rebuilt from the
    parsed arguments rather than taken from ``sys.argv``, which holds
    something else when the CLI is called as a function.
    """
    parser = argparse.ArgumentParser(add_help=False)
    TASKS[args.eval_task][1](parser)
    lines = [shlex.join(["trustgate", "eval", args.eval_task])]
    for action in parser._actions:  # argparse keeps its option table here; it has no public accessor
        value = getattr(args, action.dest)
        if value == action.default:
            continue
        flag = action.option_strings[0]
        if isinstance(action, argparse._StoreFalseAction | argparse._StoreTrueAction):
            lines.append(flag)
        elif isinstance(action, argparse._AppendAction):
            lines += [shlex.join([flag, str(item)]) for item in value]
        else:
            lines.append(shlex.join([flag, str(value)]))
    return " \\\n  ".join(lines)
