"""``trustgate keys``: make, read, change, list and delete keys made at run time, from a shell.

Each command asks the running gateway's ``/key/*`` endpoints with the
config's master key, at the address the config serves on (``--url``
otherwise), so that the gateway checks a key exactly as it checks one made
over HTTP, and every replica knows it at once; a gateway owns its SQLite key
store, so nothing else writes it. The answer is printed as the endpoint's
JSON; ``generate``'s is the only one that holds the key.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import httpx

from proxy import GatewaySettings

__all__ = ["KeysCommandError", "add_keys_parser", "gateway_url", "run_keys"]

_TIMEOUT_S = 30.0
_WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


class KeysCommandError(Exception):
    """What the user can fix: no master key, no gateway at the address, a refused request."""


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("a JSON object is needed")
    return value


def _add_settings(command: argparse.ArgumentParser) -> None:
    """The flags that set what a key may do, named after LiteLLM's fields."""
    command.add_argument("--model", action="append", dest="models", help="a model it may use (repeatable; none: all)")
    command.add_argument("--max-budget", type=float, help="US dollars per budget window (LiteLLM's max_budget)")
    command.add_argument("--budget-duration", help="how long a budget window lasts: 30m, 1h, 1d, 30d, 1mo")
    command.add_argument("--rpm", type=int, dest="rpm_limit", help="requests per minute")
    command.add_argument("--tpm", type=int, dest="tpm_limit", help="tokens per minute")
    command.add_argument("--max-parallel", type=int, dest="max_parallel_requests", help="requests in flight at once")
    command.add_argument("--duration", help="how long the key lives (30d, 12h, ...; -1: for ever)")
    command.add_argument("--metadata", type=_json_object, help="a JSON object kept with the key")
    command.add_argument("--trust-policy", type=_json_object, help="a scoring.per_key entry of its own, as JSON")
    command.add_argument(
        "--admin", action=argparse.BooleanOptionalAction, default=None, help="read every key's records"
    )
    command.add_argument(
        "--allow-account-references",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="may name objects in the operator's upstream account",
    )
    command.add_argument("--blocked", action=argparse.BooleanOptionalAction, default=None, help="refuse the key")


_SETTINGS = (
    "models",
    "max_budget",
    "budget_duration",
    "rpm_limit",
    "tpm_limit",
    "max_parallel_requests",
    "duration",
    "metadata",
    "trust_policy",
    "admin",
    "allow_account_references",
    "blocked",
)


def add_keys_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser], config_help: str) -> None:
    """``trustgate keys`` and its sub-commands; the caller sets the ``handler``."""
    keys = commands.add_parser("keys", help="make, read, change and delete keys through the running gateway")
    keys.add_argument("--config", help=config_help)
    keys.add_argument("--url", help="the gateway's address (default: the config's server.host and server.port)")
    actions = keys.add_subparsers(dest="keys_command", required=True)

    generate = actions.add_parser("generate", help="make a key (printed once, in the answer)")
    generate.add_argument("--alias", dest="key_alias", help="its name in records, logs, metrics and spend")
    _add_settings(generate)

    info = actions.add_parser("info", help="a key's settings and status")
    info.add_argument("key", help="the key's token (or the key)")

    update = actions.add_parser("update", help="change a key (the settings given; the rest stay)")
    update.add_argument("key", nargs="?", help="the key's token (or the key)")
    update.add_argument("--alias", dest="key_alias", help="names the key, where no token is given")
    _add_settings(update)

    delete = actions.add_parser("delete", help="delete keys: refused at once by every replica")
    delete.add_argument("keys", nargs="*", help="the keys' tokens (or the keys)")
    delete.add_argument("--alias", action="append", dest="key_aliases", help="a key's alias (repeatable)")

    listing = actions.add_parser("list", help="the keys, a page at a time")
    listing.add_argument("--page", type=int, default=1)
    listing.add_argument("--size", type=int, default=10)
    listing.add_argument("--alias", dest="key_alias", help="only the key of this alias")
    listing.add_argument("--full", action="store_true", help="whole keys rather than their tokens")


def _request(args: argparse.Namespace) -> tuple[str, str, dict[str, Any] | None, dict[str, Any] | None]:
    """The endpoint's method, path, query and body for the sub-command ``args`` name."""
    settings = {name: getattr(args, name) for name in _SETTINGS if getattr(args, name, None) is not None}
    command = args.keys_command
    if command == "generate":
        return "POST", "/key/generate", None, {**settings, **({"key_alias": args.key_alias} if args.key_alias else {})}
    if command == "info":
        return "GET", "/key/info", {"key": args.key}, None
    if command == "update":
        if args.key is None and args.key_alias is None:
            raise KeysCommandError("name the key to update: its token, or --alias")
        named = {name: getattr(args, name) for name in ("key", "key_alias") if getattr(args, name) is not None}
        return "POST", "/key/update", None, {**settings, **named}
    if command == "delete":
        if not args.keys and not args.key_aliases:
            raise KeysCommandError("name the keys to delete: their tokens, or --alias")
        return "POST", "/key/delete", None, {"keys": args.keys or None, "key_aliases": args.key_aliases}
    query: dict[str, Any] = {"page": args.page, "size": args.size, "return_full_object": str(args.full).lower()}
    if args.key_alias:
        query["key_alias"] = args.key_alias
    return "GET", "/key/list", query, None


def gateway_url(settings: GatewaySettings) -> str:
    """Where the config's gateway listens, as a client reaches it (a wildcard address is this host)."""
    server = settings.trustgate.server
    host = _WILDCARDS.get(server.host, server.host)
    return f"http://[{host}]:{server.port}" if ":" in host else f"http://{host}:{server.port}"


def run_keys(args: argparse.Namespace, settings: GatewaySettings) -> int:
    """Ask the gateway, print its answer; 0 when it agreed, 1 when it refused (its error on stderr)."""
    if settings.master_key is None:
        raise KeysCommandError("the config names no master_key (general_settings.master_key): keys are its to manage")
    method, path, query, body = _request(args)
    url = (args.url or gateway_url(settings)).rstrip("/")
    headers = {"authorization": f"Bearer {settings.master_key.get_secret_value()}"}
    try:
        with httpx.Client(timeout=_TIMEOUT_S) as client:
            response = client.request(method, url + path, params=query, json=body, headers=headers)
    except httpx.HTTPError as exc:
        raise KeysCommandError(
            f"no gateway answered at {url} ({type(exc).__name__}): start it, or name it with --url"
        ) from None
    try:
        answer = response.json()
    except ValueError:
        raise KeysCommandError(
            f"{url}{path} answered {response.status_code} without JSON: is it a TrustGate gateway?"
        ) from None
    if response.is_success:
        print(json.dumps(answer, indent=2))
        return 0
    error = answer.get("error", {}) if isinstance(answer, dict) else {}
    message = error.get("message") if isinstance(error, dict) else None
    print(f"trustgate keys {args.keys_command}: {response.status_code} {message or answer}", file=sys.stderr)
    return 1
