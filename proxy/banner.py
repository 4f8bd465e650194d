"""The lines ``trustgate serve`` prints once it listens: where it is, and two things to paste and try.

A newcomer's first question after ``make serve`` is "is it up, and what do I
type?": the banner answers with a ``curl`` that shows the trust headers and an
OpenAI SDK snippet that reads them and the record URL. The master key is shown
only when it is the embedded default's demo key; any other key stays out of
the log.
"""

from __future__ import annotations

from .config import GatewaySettings, default_config_path, load_settings

__all__ = ["ready_banner"]

QUESTION = "What is the capital of France?"
RULE = "-" * 78


def _shown_key(settings: GatewaySettings) -> str:
    key = settings.master_key.get_secret_value() if settings.master_key else None
    demo = load_settings(default_config_path(), {}).master_key
    if key is not None and demo is not None and key == demo.get_secret_value():
        return key
    return "$TRUSTGATE_KEY"  # the operator's own key: never printed


def ready_banner(settings: GatewaySettings, host: str, port: int) -> str:
    shown_host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    url = f"http://{shown_host}:{port}"
    key = _shown_key(settings)
    model = settings.model_list[0].model_name
    body = f'{{"model": "{model}", "messages": [{{"role": "user", "content": "{QUESTION}"}}], "max_tokens": 32}}'
    return "\n".join([
        RULE,
        f"TrustGate is ready on {url}   key: {key}   model: {model}",
        "",
        "Try it (sync mode: the response waits for its trust score):",
        f"  curl -s -D - {url}/v1/chat/completions -H 'authorization: Bearer {key}' \\",
        "    -H 'content-type: application/json' -H 'x-trustgate-mode: sync' \\",
        f"    -d '{body}'",
        "  -> headers x-trust-score, x-trust-label, x-trust-id; the whole record:",
        f"  curl -s {url}/v1/trust/<x-trust-id> -H 'authorization: Bearer {key}'",
        "",
        "From Python (pip install openai):",
        "  from openai import OpenAI",
        f'  client = OpenAI(base_url="{url}/v1", api_key="{key}")',
        "  raw = client.chat.completions.with_raw_response.create(",
        f'      model="{model}", messages=[{{"role": "user", "content": "{QUESTION}"}}],',
        '      max_tokens=32, extra_headers={"x-trustgate-mode": "sync"})',
        '  print(raw.parse().choices[0].message.content, raw.headers["x-trust-score"], raw.headers["x-trust-label"])',
        f'  print("record:", "{url}/v1/trust/" + raw.headers["x-trust-id"])',
        RULE,
    ])
