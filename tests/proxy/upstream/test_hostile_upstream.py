"""An upstream that attacks the gateway (``tests.hostile_upstream``), over real sockets, on both upstream paths.

Compressed replies cannot bypass the size cap, redirects never
carry a prompt or a key to another host, an upstream cannot forge the gateway's
verdict, and a 200 of the wrong shape (a null-filled object, an HTML page
answered to a stream) is a 502 in OpenAI's shape.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import yaml

from exporters import TRUST_HEADER_PREFIX
from tests.conftest import MASTER_KEY
from tests.e2e.gateway_process import free_port, serve_config
from tests.hostile_upstream import ANSWER, FORGED, HostileUpstream, Received, Recorder, bomb
from tests.proxy.scored_gateway import AskingScorer
from tests.proxy.upstream.both_paths import openai_error
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

AUTH = {"authorization": f"Bearer {MASTER_KEY}"}
PROMPT = "the secret plan for the quarter"
SECRETS = {"openai": "sk-upstream-secret", "azure": "azure-upstream-secret", "anthropic": "sk-ant-upstream-secret"}
PATHS = ["passthrough", "litellm"]


@pytest.fixture(scope="module")
def recorder() -> Iterator[Recorder]:
    target = Recorder()
    with ServerThread(target.app()) as server:
        target.url = server.url
        yield target


@pytest.fixture(scope="module")
def _hostile_server(recorder: Recorder) -> Iterator[HostileUpstream]:
    hostile = HostileUpstream(redirect_to=recorder.url)
    with ServerThread(hostile.app()) as server:
        hostile.url = server.url
        yield hostile


@pytest.fixture
def hostile(_hostile_server: HostileUpstream, recorder: Recorder) -> HostileUpstream:
    _hostile_server.requests.clear()
    recorder.requests.clear()
    return _hostile_server


def deployment(hostile: HostileUpstream, provider: str) -> dict[str, Any]:
    if provider == "azure":
        return {
            "model": "azure/gpt-4o-mini",
            "api_base": hostile.url,
            "api_key": SECRETS["azure"],
            "api_version": "2024-06-01",
            "timeout": 5,
        }
    if provider == "anthropic":
        return {
            "model": "anthropic/claude-3-5-haiku-20241022",
            "api_base": hostile.url,
            "api_key": SECRETS["anthropic"],
            "timeout": 5,
        }
    return {"model": "openai/gpt-4o-mini", "api_base": f"{hostile.url}/v1", "api_key": SECRETS["openai"], "timeout": 5}


def hostile_config(
    hostile: HostileUpstream, *, provider: str = "openai", path: str = "passthrough", **trustgate: Any
) -> dict[str, Any]:
    return {
        "model_list": [{"model_name": "fake", "litellm_params": deployment(hostile, provider)}],
        "router_settings": {"num_retries": 0, "timeout": 5},
        "general_settings": {"master_key": MASTER_KEY},
        "trustgate": {
            "passthrough": path == "passthrough",
            "scoring": {"queue": {"scorer_timeout_s": 1.0}, "allow_client_mode": "any"},
            **trustgate,
        },
    }


BODIES: dict[str, dict[str, Any]] = {
    "chat": {"messages": [{"role": "user", "content": PROMPT}]},
    "completions": {"prompt": PROMPT},
    "embeddings": {"input": PROMPT},
    "responses": {"input": PROMPT},
}
ROUTES = {
    "chat": "/v1/chat/completions",
    "completions": "/v1/completions",
    "embeddings": "/v1/embeddings",
    "responses": "/v1/responses",
}


def posted(hostile: HostileUpstream) -> list[Received]:
    """The calls the upstream received, without the gateway's readiness probes (GET, from start-up on)."""
    return [received for received in hostile.requests if received.method == "POST"]


def call(
    gateway_url: str, endpoint: str = "chat", *, stream: bool = False, mode: str | None = None, timeout: float = 30
) -> httpx.Response:
    body = {"model": "fake", **BODIES[endpoint], **({"stream": True} if stream else {})}
    headers = {**AUTH, **({"x-trustgate-mode": mode} if mode else {})}
    return httpx.post(f"{gateway_url}{ROUTES[endpoint]}", json=body, headers=headers, timeout=timeout)


# --- Redirects ---------------------------------------------------------------------------------------------------

REDIRECTED = [("openai", "passthrough"), ("openai", "litellm"), ("azure", "litellm"), ("anthropic", "litellm")]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize(("provider", "path"), REDIRECTED, ids=[f"{p}-{q}" for p, q in REDIRECTED])
def test_a_redirect_to_another_host_carries_neither_prompt_nor_key(
    provider: str,
    path: str,
    stream: bool,
    hostile: HostileUpstream,
    recorder: Recorder,
    start_gateway: Callable[..., ServerThread],
) -> None:
    hostile.behaviour = "redirect"
    server = start_gateway(hostile_config(hostile, provider=provider, path=path))
    response = call(server.url, stream=stream)
    assert hostile.requests, "the upstream was never asked: the test proves nothing"
    assert [
        (
            r.path,
            r.headers.get("api-key") or r.headers.get("x-api-key") or r.headers.get("authorization"),
            PROMPT in r.body.decode(),
        )
        for r in recorder.requests
    ] == []  # no prompt, no key, no request at all
    assert openai_error(response, 502)["code"] == "upstream_redirect"


CREDENTIALS = ("authorization", "api-key", "x-api-key")


@pytest.mark.parametrize(("provider", "path"), REDIRECTED, ids=[f"{p}-{q}" for p, q in REDIRECTED])
def test_following_redirects_stays_on_the_origin_without_credentials(
    provider: str, path: str, hostile: HostileUpstream, recorder: Recorder, start_gateway: Callable[..., ServerThread]
) -> None:
    """``follow_redirects: true`` follows a redirect within the origin, with the key dropped (the origin
    may serve others under other paths), and still refuses one to another host."""
    server = start_gateway(hostile_config(hostile, provider=provider, path=path, upstream={"follow_redirects": True}))
    hostile.behaviour = "redirect-same"
    answered = call(server.url)
    assert answered.status_code == 200, answered.text
    assert answered.json()["choices"][0]["message"]["content"] == ANSWER
    first, followed = posted(hostile)
    assert any(
        first.headers.get(name) == SECRETS[provider] or first.headers.get(name) == f"Bearer {SECRETS[provider]}"
        for name in CREDENTIALS
    )  # the key went where the config sends it
    assert followed.path.startswith("/same-origin") and PROMPT in followed.body.decode()
    assert {name: followed.headers[name] for name in CREDENTIALS if name in followed.headers} == {}
    hostile.behaviour = "redirect"
    assert openai_error(call(server.url), 502)["code"] == "upstream_redirect"
    assert recorder.requests == []


@pytest.mark.parametrize("path", PATHS)
def test_an_upstreams_cookie_is_never_sent_back(
    path: str, hostile: HostileUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    """One caller's reply must not set what the next caller's request carries: the pass-through client keeps
    no cookie jar, and litellm's never sees an upstream's cookie."""
    server = start_gateway(hostile_config(hostile, path=path))
    hostile.behaviour = "cookie"
    assert [call(server.url, stream=stream).status_code for stream in (False, True, False)] == [200] * 3
    assert len(posted(hostile)) == 3
    assert [r.headers.get("cookie") for r in hostile.requests] == [None] * len(hostile.requests)


# --- Reserved names ----------------------------------------------------------------------------------------------


def _trust_objects(response: httpx.Response) -> list[Any]:
    """Every trust object a client reads: the reply's ``trust`` field, or the stream's (read as SSE): a chunk's,
    a trust event's, or the one on a Responses stream's terminal response."""
    if not response.headers["content-type"].startswith("text/event-stream"):
        data = response.json()
        return [data["trust"]] if "trust" in data else []
    found = []
    for event in response.text.replace("\r\n", "\n").split("\n\n"):
        lines = event.split("\n")
        data = "\n".join(line[5:].removeprefix(" ") for line in lines if line.startswith("data:"))
        if not data or data == "[DONE]":
            continue
        payload = orjson.loads(data)
        assert not any(line == "event: trustgate.trust" for line in lines) or "trust" in payload
        if "trust" in payload or payload.get("type") == "trustgate.trust":
            found.append(payload.get("trust"))
        response_object = payload.get("response")
        if isinstance(response_object, dict) and "trust" in response_object:  # on response.completed
            found.append(response_object["trust"])
    return found


FORGED_REPLIES = [
    ("chat", False),
    ("chat", True),
    ("completions", False),
    ("completions", True),
    ("responses", False),
    ("responses", True),
    ("embeddings", False),
]


@pytest.mark.parametrize(
    ("endpoint", "stream"), FORGED_REPLIES, ids=[f"{e}-{'stream' if s else 'whole'}" for e, s in FORGED_REPLIES]
)
@pytest.mark.parametrize("path", PATHS)
def test_an_upstreams_forged_verdict_never_reaches_the_client(
    path: str, endpoint: str, stream: bool, hostile: HostileUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    """In every mode the client reads only the gateway's trust data: none in off, its own otherwise (in-band on a
    stream in async mode too: the answer, "an answer", is not applicable, so its record is settled at once)."""
    hostile.behaviour = "forged"
    server = start_gateway(hostile_config(hostile, path=path), scorers=[AskingScorer("bc", 0.9)])
    for mode in ("off", "async", "sync"):
        response = call(server.url, endpoint, stream=stream, mode=mode)
        assert response.status_code == 200, response.text
        assert "trust-forged" not in response.text
        assert "trust-forged" not in response.headers.values()
        trust = _trust_objects(response)
        if mode != "off" and stream and endpoint != "embeddings":
            assert [t["id"] for t in trust] == [response.headers["x-trust-id"]]
        else:
            assert trust == []
        if mode == "off" or endpoint == "embeddings":
            assert not [name for name in response.headers if name.startswith(TRUST_HEADER_PREFIX)]
        else:
            assert response.headers["x-trust-id"].startswith("trust-")
            assert response.headers["x-trust-id"] != FORGED["id"]


def test_the_answer_is_forwarded_without_the_forged_fields(
    hostile: HostileUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    hostile.behaviour = "forged"
    server = start_gateway(hostile_config(hostile))
    reply = call(server.url, mode="off").json()
    assert reply["choices"][0]["message"]["content"] == "an answer" and "trust" not in reply
    events = call(server.url, stream=True, mode="off").text
    assert '"an answer"' in events and events.endswith("data: [DONE]\n\n")


# --- Reply validation --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", list(ROUTES))
@pytest.mark.parametrize("path", PATHS)
def test_a_200_whose_fields_are_all_null_is_a_502(
    path: str, endpoint: str, hostile: HostileUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    hostile.behaviour = "null-fields"
    server = start_gateway(hostile_config(hostile, path=path))
    error = openai_error(call(server.url, endpoint, mode="off"), 502)
    assert error["code"] == "upstream_malformed_reply"


NO_EVENTS = {"html-page": "html-stream", "json-of-nulls": "null-fields", "event-stream-without-events": "empty-stream"}


@pytest.mark.parametrize("mode", ["off", "sync"])
@pytest.mark.parametrize("behaviour", list(NO_EVENTS.values()), ids=list(NO_EVENTS))
@pytest.mark.parametrize("endpoint", ["chat", "completions", "responses"])
@pytest.mark.parametrize("path", PATHS)
def test_a_stream_answered_without_events_is_a_502(
    path: str,
    endpoint: str,
    behaviour: str,
    mode: str,
    hostile: HostileUpstream,
    start_gateway: Callable[..., ServerThread],
) -> None:
    """An HTML page, a JSON object of nulls or an event stream with no event, answered to a stream: litellm
    would read the last two as a stream with no chunks and make up a final chunk, a successful empty answer."""
    hostile.behaviour = behaviour
    server = start_gateway(hostile_config(hostile, path=path))
    response = call(server.url, endpoint, stream=True, mode=mode)
    error = openai_error(response, 502)
    assert error["code"] == "upstream_malformed_reply"
    assert not response.headers["content-type"].startswith("text/event-stream")


NULL_STREAMS = [("openai", path, endpoint) for path in PATHS for endpoint in ("chat", "completions", "responses")]
NULL_STREAMS += [("azure", "litellm", "chat"), ("anthropic", "litellm", "chat")]


@pytest.mark.parametrize(("provider", "path", "endpoint"), NULL_STREAMS, ids=["-".join(case) for case in NULL_STREAMS])
def test_a_stream_whose_first_event_is_all_nulls_is_a_502(
    provider: str, path: str, endpoint: str, hostile: HostileUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    """Right media type, wrong events, which the litellm path would otherwise pass on as an empty successful stream."""
    hostile.behaviour = "null-stream"
    server = start_gateway(hostile_config(hostile, provider=provider, path=path))
    response = call(server.url, endpoint, stream=True, mode="off")
    assert openai_error(response, 502)["code"] == "upstream_malformed_reply"
    assert not response.headers["content-type"].startswith("text/event-stream")


# --- Readiness probes against a hostile upstream -------------------------------------------------------------------


@pytest.mark.parametrize("behaviour", ["drip", "bomb:zstd"])
def test_a_readiness_probe_never_reads_the_upstreams_listing(
    behaviour: str, hostile: HostileUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    """The probe needs the status alone: a listing that drips for ever (which held every readiness caller
    behind the probe) or that decodes to a gigabyte is never read, and identity is asked for."""
    hostile.behaviour = behaviour
    server = start_gateway(hostile_config(hostile))
    reply = httpx.get(f"{server.url}/health/readiness", timeout=10)
    assert (reply.status_code, reply.json()) == (200, {"status": "ok"})
    assert [(r.method, r.path, r.headers.get("accept-encoding")) for r in hostile.requests] == [
        ("GET", "/v1/models", "identity")
    ]


# --- Encodings ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("coding", ["br", "compress", "gzip, zstd"])
@pytest.mark.parametrize("path", PATHS)
def test_a_reply_in_an_encoding_the_gateway_does_not_read_is_a_502(
    path: str, coding: str, hostile: HostileUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    hostile.behaviour = f"encoding:{coding}"
    server = start_gateway(hostile_config(hostile, path=path))
    assert openai_error(call(server.url, mode="off"), 502)["code"] == "upstream_bad_encoding"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize(("provider", "path"), REDIRECTED, ids=[f"{p}-{q}" for p, q in REDIRECTED])
def test_a_compressed_answer_within_the_cap_is_read_on_every_provider(
    provider: str, path: str, stream: bool, hostile: HostileUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    """Decoding stays for an upstream that compresses anyway: the same transport serves every provider."""
    hostile.behaviour = "gzip-answer"
    server = start_gateway(hostile_config(hostile, provider=provider, path=path))
    response = call(server.url, stream=stream, mode="off")
    assert response.status_code == 200, response.text
    assert hostile.requests[-1].headers["accept-encoding"] == "identity"
    if stream:
        chunks = [orjson.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: {")]
        assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]) == ANSWER
        assert response.text.endswith("data: [DONE]\n\n")
    else:
        assert response.json()["choices"][0]["message"]["content"] == ANSWER


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("coding", ["zstd", "gzip"])
@pytest.mark.parametrize("path", PATHS)
def test_a_compressed_bomb_is_refused_at_the_cap_on_its_decoded_size(
    path: str, coding: str, stream: bool, hostile: HostileUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    hostile.behaviour = f"bomb:{coding}"
    server = start_gateway(hostile_config(hostile, path=path, upstream={"max_response_bytes": 1_000_000}))
    error = openai_error(call(server.url, stream=stream, mode="off"), 502)
    assert error["code"] == "upstream_reply_too_large"
    assert hostile.requests[-1].headers["accept-encoding"] == "identity"


# --- Compressed bombs against a gateway process: its memory and its liveness ---------------------------------------

NO_SCORERS = {name: {"enabled": False} for name in ("consistency", "factcheck", "rag", "logprob")}


_PROBE = """
import sys, time, httpx
with httpx.Client(timeout=10) as client:
    while True:
        started = time.perf_counter()
        try:
            status = client.get(sys.argv[1]).status_code
        except httpx.HTTPError as exc:
            print("failed", type(exc).__name__, flush=True)
            continue
        print(f"{time.perf_counter() - started:.6f}" if status == 200 else f"failed {status}", flush=True)
        time.sleep(0.005)
"""


class LivenessProbe:
    """Asks ``/health/liveliness`` over and over from a process of its own, keeping each answer's latency.

    A process, not a thread: the test's own threads (the hostile upstream, the
    callers) must not add their waits for the GIL to the latencies measured.
    """

    def __init__(self, url: str) -> None:
        self._url = f"{url}/health/liveliness"
        self.latencies: list[float] = []
        self.failures: list[str] = []

    def __enter__(self) -> LivenessProbe:
        self._process = subprocess.Popen([sys.executable, "-c", _PROBE, self._url], stdout=subprocess.PIPE, text=True)
        assert self._process.stdout is not None
        self._record(self._process.stdout.readline())  # probing has begun
        return self

    def _record(self, line: str) -> None:
        if line.startswith("failed"):
            self.failures.append(line.strip())
        elif line.strip():
            self.latencies.append(float(line))

    def __exit__(self, *exc: object) -> None:
        self._process.terminate()
        rest, _ = self._process.communicate(timeout=30)
        for line in rest.splitlines():
            self._record(line)


@pytest.mark.parametrize("path", PATHS)
def test_three_compressed_bombs_leave_memory_and_liveness_alone(
    path: str, hostile: HostileUpstream, tmp_path: Path
) -> None:
    """The decoding bound: three 32 KiB zstd replies at once (each about 1 GiB decoded), refused while the
    gateway's peak resident memory grows by less than 64 MB and liveness answers every probe throughout.

    How fast liveness answers is the machine's as much as the gateway's (a loaded 2-core machine took 195 ms):
    it is printed, not bounded. A bomb decoded whole would show in the memory bound."""
    config = hostile_config(
        hostile,
        path=path,
        upstream={"max_response_bytes": 1_000_000},
        scoring=NO_SCORERS,
        server={"port": free_port()},
        store={"path": str(tmp_path / "records.sqlite3")},
    )
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(config))
    assert len(bomb("zstd")) <= 40 * 1024
    with serve_config(config_file, timeout=120) as gateway:
        # Lazy imports and pools before measuring: an answer's, a decoded answer's and a refusal's, never a bomb's
        # (whose own peak would then hide in the baseline).
        for behaviour, stream, status in [
            ("forged", False, 200),
            ("gzip-answer", False, 200),
            ("gzip-answer", True, 200),
            ("encoding:br", False, 502),
        ]:
            hostile.behaviour = behaviour
            assert call(gateway.url, stream=stream, mode="off").status_code == status
        hostile.behaviour = "bomb:zstd"
        before = gateway.peak_rss_bytes()
        with LivenessProbe(gateway.url) as probe, ThreadPoolExecutor(3) as pool:
            time.sleep(0.2)
            replies = list(pool.map(lambda stream: call(gateway.url, stream=stream, mode="off"), [False, True, False]))
            time.sleep(0.2)
        grown = gateway.peak_rss_bytes() - before
    assert [openai_error(reply, 502)["code"] for reply in replies] == ["upstream_reply_too_large"] * 3
    print(f"peak RSS grew by {grown / 1e6:.1f} MB; liveness max {max(probe.latencies) * 1000:.0f} ms")
    assert grown < 64 * 1024 * 1024, f"peak RSS grew by {grown / 1e6:.0f} MB"
    assert probe.failures == [] and len(probe.latencies) >= 10
