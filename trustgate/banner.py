"""The lines ``trustgate serve`` prints once it listens: where it is, and two things to paste and try.

A newcomer's first question after ``make serve`` is "is it up, and what do I
type?": the banner answers with a ``curl`` that shows the trust headers, what
the first score rests on (the shipped prior, until labels teach the model a
fit), and an OpenAI SDK snippet that reads them and the record URL. Each command runs as
printed in bash: the key is the embedded default's demo key written out, or
the environment variable the config reads it from (``os.environ/NAME``), in
double quotes so that the shell expands it. A key written into an operator's
own config stays out of the log; the banner then says which variable to set.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from proxy import ENV_PREFIX, MASTER, GatewaySettings, default_config_path, load_settings
from scoring import ScoringMode, decide

__all__ = ["READY", "ready_banner", "ready_url"]

READY = "TrustGate is ready on"
QUESTION = "What is the capital of France?"
RULE = "-" * 78
SHELL_KEY_VARIABLE = "TRUSTGATE_KEY"  # what the banner asks for when the config names no variable


@dataclass(frozen=True)
class _Key:
    """The key as the commands use it: the demo key written out, or the variable that holds it."""

    literal: str | None = None
    variable: str | None = None
    setup: str | None = None  # what the user does first, when the config names no variable

    @property
    def shown(self) -> str:
        return self.literal or f"${self.variable}"

    @property
    def curl_header(self) -> str:
        """Single quotes keep a literal as is; double quotes let bash expand the variable."""
        if self.literal:
            return f"'authorization: Bearer {self.literal}'"
        return f'"authorization: Bearer ${self.variable}"'

    @property
    def python(self) -> str:
        return f'"{self.literal}"' if self.literal else f'os.environ["{self.variable}"]'


def _configured_master_key(config_path: str | Path) -> object:
    """``general_settings.master_key`` as written in the file (``os.environ/NAME`` not yet resolved)."""
    raw = yaml.safe_load(Path(config_path).read_text())
    general = raw.get("general_settings") if isinstance(raw, dict) else None
    return general.get("master_key") if isinstance(general, dict) else None


def _key(settings: GatewaySettings, config_path: str | Path) -> _Key | None:
    """None when the gateway asks for no key at all."""
    written = _configured_master_key(config_path)
    if isinstance(written, str) and written.startswith(ENV_PREFIX):
        return _Key(variable=written.removeprefix(ENV_PREFIX))
    key = settings.master_key.get_secret_value() if settings.master_key else None
    demo = load_settings(default_config_path(), {}).master_key
    if key is not None and demo is not None and key == demo.get_secret_value():
        return _Key(literal=key)
    if key is None and not settings.trustgate.keys:
        return None  # trustgate.allow_unauthenticated
    source = "general_settings.master_key" if key is not None else "one of trustgate.keys"
    return _Key(variable=SHELL_KEY_VARIABLE, setup=f"First: export {SHELL_KEY_VARIABLE}=<{source} of your config>")


def ready_url(host: str, port: int) -> str:
    """Where a client on this machine reaches the gateway (a wildcard bind is reached on loopback)."""
    shown_host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return f"http://{shown_host}:{port}"


def ready_banner(settings: GatewaySettings, host: str, port: int, config_path: str | Path) -> str:
    url = ready_url(host, port)
    key = _key(settings, config_path)
    model = settings.model_list[0].model_name
    body = f'{{"model": "{model}", "messages": [{{"role": "user", "content": "{QUESTION}"}}], "max_tokens": 32}}'
    auth = f" -H {key.curl_header}" if key else ""
    shown_key = f"   key: {key.shown}" if key else ""
    api_key = key.python if key else '"none"'
    shown = _shown_mode(settings, model)
    sync_header = " -H 'x-trustgate-mode: sync'" if shown == "sync" else ""
    messages = f'messages=[{{"role": "user", "content": "{QUESTION}"}}]'
    return "\n".join(
        [
            RULE,
            f"{READY} {url}{shown_key}   model: {model}",
            *([key.setup] if key and key.setup else []),
            "",
            _TRY_IT[shown],
            f"  curl -s -D - {url}/v1/chat/completions{auth} \\",
            f"    -H 'content-type: application/json'{sync_header} \\",
            f"    -d '{body}'",
            *(
                [_HEADERS[shown], f"  curl -s {url}/v1/trust/TRUST_ID{auth}", *_rests_on(settings)]
                if shown != "off"
                else []
            ),
            "",
            "From Python (pip install openai):",
            *(["  import os"] if key and key.variable else []),
            "  from openai import OpenAI",
            f'  client = OpenAI(base_url="{url}/v1", api_key={api_key})',
            *(
                _python_scored(model, messages, url, waits=shown == "sync")
                if shown != "off"
                else [
                    "  reply = client.chat.completions.create(",
                    f'      model="{model}", {messages}, max_tokens=32)',
                    "  print(reply.choices[0].message.content)",
                ]
            ),
            RULE,
        ]
    )


def _shown_mode(settings: GatewaySettings, model: str) -> ScoringMode:
    """What the commands get on ``model`` with the master key (or a key without an entry of its own), as
    ``decide`` has it: sync where the sync header is honoured, else the mode without it; ``off`` prints commands
    that read no trust header."""
    scoring, key_name = settings.trustgate.scoring, MASTER if settings.master_key else ""
    if decide(scoring, model=model, key_name=key_name, request_key=str, mode_header="sync").mode == "sync":
        return "sync"
    return decide(scoring, model=model, key_name=key_name, request_key=str, mode_header=None).mode


_TRY_IT: dict[ScoringMode, str] = {
    "sync": "Try it (sync mode: the response waits for its trust score):",
    "async": "Try it (scored after the response: the record fills in once scoring is done):",
    "off": "Try it (scoring is off in this config: the answer comes back without trust headers):",
}
_HEADERS: dict[ScoringMode, str] = {
    "sync": "  -> headers x-trust-score, x-trust-label, x-trust-id; the whole record (TRUST_ID: that x-trust-id):",
    "async": "  -> headers x-trust-id, x-trust-status: pending; the whole record (TRUST_ID: that x-trust-id):",
}


def _rests_on(settings: GatewaySettings) -> list[str]:
    """What the first scores rest on: the shipped prior, until the model's labels teach it a fit of its own."""
    feedback = settings.trustgate.scoring.feedback
    until = (
        [
            f"  It rests on x-trust-basis: default (the shipped prior) until {feedback.min_labels} labels",
            "  (POST /v1/trust/TRUST_ID/feedback) teach this model a fit of its own (learned);",
        ]
        if feedback.learn
        else ["  It rests on x-trust-basis: default (the shipped prior: learning from labels is off);"]
    )
    return [*until, "  x-trust-missing names any component that gave no value."]


def _python_scored(model: str, messages: str, url: str, *, waits: bool) -> list[str]:
    """The SDK lines that read a scored answer's trust headers and print its record's URL."""
    return [
        "  raw = client.chat.completions.with_raw_response.create(",
        f'      model="{model}", {messages},',
        '      max_tokens=32, extra_headers={"x-trustgate-mode": "sync"})' if waits else "      max_tokens=32)",
        '  print(raw.parse().choices[0].message.content, raw.headers["x-trust-score"], raw.headers["x-trust-label"])'
        if waits
        else '  print(raw.parse().choices[0].message.content, raw.headers["x-trust-status"])',
        f'  print("record:", "{url}/v1/trust/" + raw.headers["x-trust-id"])',
    ]
