"""The ``trustgate`` command line."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import socket
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, entry_points, version
from pathlib import Path

import uvicorn
from threadpoolctl import threadpool_limits

from proxy import (
    LOG_FORMATS,
    ConfigError,
    GatewaySettings,
    LocalUpstreamError,
    LogFormat,
    Mount,
    configure_logging,
    create_app,
    default_config_path,
    install_access_log_redaction,
    load_settings,
    packaged_model_path,
    raise_descriptor_limit,
    server_options,
)
from scoring import ScoringSettings

from .banner import READY, ready_banner, ready_url
from .keys import KeysCommandError, add_keys_parser, run_keys
from .worker import run_worker

__all__ = ["main"]

log = logging.getLogger("trustgate")


class UserError(Exception):
    """What the user can fix (a config, a corpus file): one line on stderr and exit status 2, no traceback."""


Handler = Callable[[argparse.Namespace], int]

CONFIG_VARIABLE = "TRUSTGATE_CONFIG"
LOG_FORMAT_VARIABLE = "TRUSTGATE_LOG_FORMAT"


def _version() -> str:
    """The installed distribution's version (what `pip show trustgate` says), for bug reports."""
    try:
        return version("trustgate")
    except PackageNotFoundError:  # a checkout run without installing it
        return "unknown (not installed)"


def _config_path(args: argparse.Namespace) -> str | Path:
    """``--config``, else ``$TRUSTGATE_CONFIG`` (how a container or a systemd unit names it), else the default."""
    return args.config or os.environ.get(CONFIG_VARIABLE) or default_config_path()


def _one_blas_thread() -> None:
    """Scoring's small vector maths gains no speed from BLAS threads, only CPU use (bench/distractors.py)."""
    threadpool_limits(1, user_api="blas")


_YOUNG_OBJECTS = 7000  # side by side against 700 (bench.gateway_ab): 8-20 % less gateway CPU per request


def _freeze_start_up_objects() -> None:
    """Take what start-up built (modules, config, the scorers' models) out of the garbage collector's sight.

    None of it becomes garbage, yet every full collection under load would walk
    all of it again: with requests in flight at each younger collection, a full
    one comes every few hundred requests, and each took tens to hundreds of
    milliseconds of a request's latency (``bench.gateway_ab``). Frozen, a full collection
    walks only what requests left behind. The youngest generation is collected
    every ``_YOUNG_OBJECTS`` allocations rather than 700, so that fewer objects of
    requests still in flight survive into the older generations.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(_YOUNG_OBJECTS, 10, 10)


class _AnnouncingServer(uvicorn.Server):
    """uvicorn's server, announcing itself once its socket listens (after the lifespan started): the banner
    for a person at a terminal, or with JSON logs one log line, as a log collector reads the rest."""

    def __init__(
        self, config: uvicorn.Config, settings: GatewaySettings, config_path: str | Path, log_format: LogFormat
    ) -> None:
        super().__init__(config)
        self._settings = settings
        self._config_path = config_path
        self._log_format = log_format

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and not self.should_exit:
            _freeze_start_up_objects()
            port = next((s.getsockname()[1] for server in self.servers for s in server.sockets or []), self.config.port)
            if self._log_format == "json":
                log.info("%s %s", READY, ready_url(self.config.host, port))
            else:
                print(ready_banner(self._settings, self.config.host, port, self._config_path), flush=True)


# A sub-command an app adds to ``trustgate`` (the evaluation app's ``eval``): it adds its parser, whose
# ``handler`` default runs it, to the sub-commands it is given.
AddCommand = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]


def installed_commands() -> list[AddCommand]:
    """The sub-commands of installed apps: each names its ``AddCommand`` under the ``trustgate.commands``
    entry point, so the CLI offers ``trustgate eval`` without importing the evaluation app by name."""
    return [entry.load() for entry in entry_points(group="trustgate.commands")]


def installed_apps() -> list[Mount]:
    """Apps built on the gateway (the trust console) that are installed: each names its mount function
    under the ``trustgate.apps`` entry point, so the gateway serves them without importing them."""
    return [entry.load() for entry in entry_points(group="trustgate.apps")]


def _serving_settings(config_path: str | Path) -> GatewaySettings:
    """The config's settings, its ``environment_variables`` set in this process's environment, as LiteLLM's
    proxy sets them: litellm reads a provider's key there where a deployment names none (gateway and worker)."""
    settings = load_settings(config_path)
    os.environ.update(settings.exported_environment())
    return settings


def _serve(args: argparse.Namespace) -> int:
    _one_blas_thread()
    config_path = _config_path(args)
    settings = _serving_settings(config_path)
    server = settings.trustgate.server
    raise_descriptor_limit(server)
    config = uvicorn.Config(
        create_app(settings, mounts=installed_apps()),
        host=args.host or server.host,
        port=args.port if args.port is not None else server.port,
        log_level=args.log_level,
        access_log=args.access_log,
        log_config=None,  # uvicorn's lines go through the root handler (proxy/base/log_format.py)
        **server_options(server),
    )
    install_access_log_redaction()  # uvicorn.Config has configured its loggers by now
    gateway = _AnnouncingServer(config, settings, config_path, _log_format(args))
    gateway.run()
    return 0 if gateway.started else 3  # uvicorn's own exit status for a failed start-up


def _worker(args: argparse.Namespace) -> int:
    _one_blas_thread()
    settings = _serving_settings(_config_path(args))
    asyncio.run(
        run_worker(
            settings, metrics_host=args.metrics_host, metrics_port=None if args.metrics_port == 0 else args.metrics_port
        )
    )
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    from proxy.calibrate import accept, calibrate, describe_report
    from scoring import FitKey, HeldFitMismatch

    settings = load_settings(_config_path(args))
    if args.accept is not None:
        if args.fit is None:
            print("trustgate calibrate --accept MODEL needs --fit FIT_ID (the held fit's id)", file=sys.stderr)
            return 2
        try:
            print(describe_report(asyncio.run(accept(settings, FitKey(args.accept, args.key), args.fit))))
        except HeldFitMismatch as exc:
            print(f"trustgate calibrate: {exc}", file=sys.stderr)
            return 1
        return 0
    reports = asyncio.run(calibrate(settings, args.model or None))
    for report in reports:
        print(describe_report(report))
    if not reports:
        print("trustgate calibrate: no labelled records yet (POST /v1/trust/{id}/feedback)", file=sys.stderr)
    return 0


def _keys(args: argparse.Namespace) -> int:
    try:
        return run_keys(args, load_settings(_config_path(args)))
    except KeysCommandError as exc:
        raise UserError(str(exc)) from None


def _scoring_settings(args: argparse.Namespace) -> ScoringSettings:
    return load_settings(_config_path(args)).trustgate.scoring


# The asset and corpus commands import the scorers' builders (spaCy, gensim, bm25s) when they run,
# not when the CLI starts: `trustgate serve` with scoring off and `trustgate --help` never load them.


def _asset_command(work: Callable[[ScoringSettings, argparse.Namespace], int]) -> Handler:
    """A handler that runs ``work`` on the config's scoring settings; a corpus it cannot read is a user error."""

    def handler(args: argparse.Namespace) -> int:
        from scoring.factcheck.sources import CorpusError

        try:
            return work(_scoring_settings(args), args)
        except CorpusError as exc:
            raise UserError(str(exc)) from exc

    return handler


def _build_assets(settings: ScoringSettings, args: argparse.Namespace) -> int:
    from scoring.consistency.assets import build_consistency_assets
    from scoring.factcheck.assets import build_factcheck_assets
    from scoring.private_files import private_directory

    if args.data_dir is not None:  # an image's shared, read-only copy: readable by the user the image runs as
        settings = settings.model_copy(update={"data_dir": Path(args.data_dir)})
    elif not settings.data_dir.exists():
        # The config's data_dir is also where the gateway keeps its records by default: made private from
        # the start, so the first `trustgate serve` has nothing to tighten (and no warning to print).
        private_directory(settings.data_dir)
    build_consistency_assets(settings)
    build_factcheck_assets(settings)
    return 0


def _corpus_add(settings: ScoringSettings, args: argparse.Namespace) -> int:
    from scoring.factcheck.assets import add_corpus

    added = add_corpus(settings, Path(args.path), name=args.name)
    print(f"corpus {added.name}: {added.passages} passages; the evidence index now holds {added.index_passages}")
    return 0


def _corpus_remove(settings: ScoringSettings, args: argparse.Namespace) -> int:
    from scoring.factcheck.assets import remove_corpus

    if not remove_corpus(settings, args.name):
        print(f"trustgate: no corpus named {args.name}", file=sys.stderr)
        return 1
    print(f"corpus {args.name} removed; evidence index rebuilt")
    return 0


def _model_path(args: argparse.Namespace) -> int:
    print(packaged_model_path())
    return 0


def _add_log_format(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        help=f"log lines as text or one JSON object each (default: ${LOG_FORMAT_VARIABLE}, else text)",
    )


def _log_format(args: argparse.Namespace) -> LogFormat:
    chosen = getattr(args, "log_format", None) or os.environ.get(LOG_FORMAT_VARIABLE) or "text"
    if chosen not in LOG_FORMATS:
        raise UserError(f"{LOG_FORMAT_VARIABLE}={chosen}: choose one of {', '.join(LOG_FORMATS)}")
    return chosen


def _parser(app_commands: Sequence[AddCommand]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trustgate", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the gateway")
    serve.add_argument(
        "--config", help=f"YAML config (default: ${CONFIG_VARIABLE}, else the embedded local-model config)"
    )
    serve.add_argument("--host", help="bind address (default: from config, 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default: from config, 4000)")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    serve.add_argument("--access-log", action=argparse.BooleanOptionalAction, default=True)
    _add_log_format(serve)
    serve.set_defaults(handler=_serve)

    worker = commands.add_parser("worker", help="score jobs from the Redis Stream (queue backend: redis)")
    worker.add_argument("--config", help=f"YAML config (the gateway's; default: ${CONFIG_VARIABLE})")
    worker.add_argument("--metrics-host", default="127.0.0.1", help="bind address of /metrics")
    worker.add_argument("--metrics-port", type=int, default=9400, help="port of /metrics (0: none)")
    _add_log_format(worker)
    worker.set_defaults(handler=_worker)

    calibrate = commands.add_parser("calibrate", help="refit each model's learned Trust_OV from its labelled records")
    calibrate.add_argument(
        "--config", help=f"YAML config (the gateway's: its record store and fit store; default: ${CONFIG_VARIABLE})"
    )
    calibrate.add_argument("--model", action="append", help="a model group (repeatable; default: every one)")
    calibrate.add_argument(
        "--accept", metavar="MODEL", help="serve the fit the refit guard held for MODEL instead of refitting"
    )
    calibrate.add_argument("--fit", metavar="FIT_ID", help="with --accept: the held fit's id, as calibrate shows it")
    calibrate.add_argument("--key", help="with --accept: the key whose own fit it is (feedback.scope: key)")
    calibrate.set_defaults(handler=_calibrate)

    add_keys_parser(commands, f"YAML config (the gateway's: its address and master key; default: ${CONFIG_VARIABLE})")
    commands.choices["keys"].set_defaults(handler=_keys)

    assets = commands.add_parser("build-assets", help="build the knowledge graph, word vectors and evidence index")
    assets.add_argument("--config", help=f"YAML config (its trustgate.scoring.data_dir; default: ${CONFIG_VARIABLE})")
    assets.add_argument("--data-dir", help="build here instead of the config's data_dir (an image build)")
    assets.set_defaults(handler=_asset_command(_build_assets))

    corpus = commands.add_parser("corpus", help="manage the fact-check evidence corpora")
    corpus_commands = corpus.add_subparsers(dest="corpus_command", required=True)
    add = corpus_commands.add_parser("add", help="add a JSONL of {id, title, text} or a folder of .txt files")
    add.add_argument("path")
    add.add_argument("--name", help="corpus name (default: the file or folder name)")
    add.add_argument("--config", help=f"YAML config (its trustgate.scoring.data_dir; default: ${CONFIG_VARIABLE})")
    add.set_defaults(handler=_asset_command(_corpus_add))
    remove = corpus_commands.add_parser("remove", help="remove a user corpus and rebuild the index")
    remove.add_argument("name")
    remove.add_argument("--config", help=f"YAML config (its trustgate.scoring.data_dir; default: ${CONFIG_VARIABLE})")
    remove.set_defaults(handler=_asset_command(_corpus_remove))

    for add_command in app_commands:
        add_command(commands)

    model = commands.add_parser("model-path", help="print the packaged SmolLM2 GGUF path")
    model.set_defaults(handler=_model_path)
    return parser


def main(argv: Sequence[str] | None = None, *, commands: Sequence[AddCommand] | None = None) -> int:
    """Run ``trustgate``; ``commands`` replace the installed apps' sub-commands (a test of a checkout whose
    installed metadata predates a new entry point hands them over, as ``create_app`` takes ``mounts``)."""
    args = _parser(installed_commands() if commands is None else commands).parse_args(argv)
    try:
        configure_logging(_log_format(args))
    except UserError as exc:
        print(f"trustgate: {exc}", file=sys.stderr)
        return 2
    logging.getLogger("bm25s").setLevel(logging.WARNING)  # bm25s sets its own logger to DEBUG on import
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per upstream request otherwise
    logging.getLogger("gensim").setLevel(logging.WARNING)  # ~30 lines per training run of the word vectors
    try:
        return int(args.handler(args))
    except (ConfigError, LocalUpstreamError, UserError) as exc:
        print(f"trustgate: {exc}", file=sys.stderr)
        return 2
