"""Keys isolate tenants: record ownership, the operator's scoring policy, fallbacks within a key's models.

Each test reproduces one observation of the security review over real
sockets: the gateway under uvicorn, the fake upstream, and (for the Redis
paths) a real redis-server and a worker process.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest

from scoring.policy import in_sample
from scoring.redis_queue import StreamKeys
from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.proxy.metric_samples import samples
from tests.proxy.redis_gateway import redis_config
from tests.proxy.scored_gateway import AskingScorer
from tests.proxy.tenants import KEYS, bearer, chat, operator_config
from tests.redis_server import RedisServer
from tests.servers import ServerThread

pytestmark = pytest.mark.integration


def default_policy_redis_config(upstream_url: str, redis_url: str) -> dict[str, Any]:
    config = redis_config(upstream_url, redis_url)
    config["trustgate"]["scoring"].pop("allow_client_mode", None)  # back to the default policy
    config["trustgate"]["keys"] = KEYS
    return config


def read_record(server: ServerThread, key: str, record_id: str) -> httpx.Response:
    return httpx.get(f"{server.url}/v1/trust/{record_id}", headers=bearer(key), timeout=10)


def assert_reads_as_missing(server: ServerThread, key: str, record_id: str) -> None:
    """Another key's record answers exactly as an id that never existed does: no oracle for ids."""
    foreign = read_record(server, key, record_id)
    missing_id = "trust-" + "0" * 32
    missing = read_record(server, key, missing_id)
    assert foreign.status_code == missing.status_code == 404
    assert foreign.json() == {
        **missing.json(),
        "error": {
            **missing.json()["error"],
            "message": missing.json()["error"]["message"].replace(missing_id, record_id),
        },
    }
    assert "Who built" not in foreign.text


def assert_only_owner_and_admins_read(server: ServerThread, record_id: str) -> dict[str, Any]:
    assert_reads_as_missing(server, "sk-team-b", record_id)
    own = read_record(server, "sk-team-a", record_id)
    assert own.status_code == 200 and own.json()["owner"] == "team-a"
    for admin in ("sk-auditor", MASTER_KEY):
        assert read_record(server, admin, record_id).json() == own.json()
    return own.json()  # type: ignore[no-any-return]


# --- 1. a key reads only its own records (the master key and admin keys read all) ---------------------------


def test_sqlite_records_are_read_by_their_owner_and_admins_only(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = operator_config(fake_upstream.url, mode="sync")  # type: ignore[attr-defined]
    server = start_gateway(config, scorers=[AskingScorer("bc", 0.9)])
    response = chat(server, "sk-team-a")
    assert response.headers["x-trust-status"] == "done"
    record = assert_only_owner_and_admins_read(server, response.headers["x-trust-id"])
    assert "sk-team-a" not in str(record)  # the key's name, never the key


def test_a_pending_record_is_not_shown_to_another_key(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    server = start_gateway(
        operator_config(fake_upstream.url),  # type: ignore[attr-defined]
        scorers=[AskingScorer("bc", 0.9, delay=2.0)],
    )
    record_id = chat(server, "sk-team-a").headers["x-trust-id"]
    assert read_record(server, "sk-team-a", record_id).json()["status"] == "pending"
    assert_reads_as_missing(server, "sk-team-b", record_id)


def test_redis_worker_records_keep_their_owner(
    fake_upstream: FakeUpstream,
    redis_server: RedisServer,
    start_gateway: Callable[..., ServerThread],
    start_worker: Callable[..., subprocess.Popen[bytes]],
) -> None:
    config = default_policy_redis_config(fake_upstream.url, redis_server.url)  # type: ignore[attr-defined]
    config["trustgate"]["scoring"]["mode"] = "sync"
    gateway = start_gateway(config, scorers=[AskingScorer("bc", 0.1)])
    start_worker(config)
    response = chat(gateway, "sk-team-a")
    assert response.headers["x-trust-status"] == "done"  # scored by the worker, from the job it read
    record = assert_only_owner_and_admins_read(gateway, response.headers["x-trust-id"])
    assert record["components"]["bc"]["value"] == 0.8  # the worker's scorer, not the gateway's
    replica = start_gateway(config, scorers=[])
    assert_only_owner_and_admins_read(replica, record["id"])


def test_key_names_must_be_unique_and_not_reserved(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    from proxy.config.settings import ConfigError, settings_from_dict

    for keys in (
        [{"key": "sk-1", "name": "team"}, {"key": "sk-2", "name": "team"}],
        [{"key": "sk-1", "name": "master"}],
    ):
        config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
        config["trustgate"] = {"keys": keys}
        with pytest.raises(ConfigError, match=r"team|master"):
            settings_from_dict(config, {})


# --- 2. the operator's policy outranks the client's x-trustgate-mode ----------------------------------------


@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_a_client_cannot_turn_scoring_on_for_a_key_configured_off(
    backend: str,
    request: pytest.FixtureRequest,
    fake_upstream: FakeUpstream,
    start_gateway: Callable[..., ServerThread],
) -> None:
    if backend == "redis":
        redis: RedisServer = request.getfixturevalue("redis_server")
        config = default_policy_redis_config(fake_upstream.url, redis.url)  # type: ignore[attr-defined]
    else:
        config = operator_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["trustgate"]["scoring"]["per_key"] = {"team-b": {"mode": "off"}}
    server = start_gateway(config, scorers=[AskingScorer("bc", 0.9), AskingScorer("fc", 0.5)])
    for question in ("first", "second"):
        response = chat(server, "sk-team-b", question, headers={"x-trustgate-mode": "sync"})
        assert response.status_code == 200  # ignored, not an error
        assert not [h for h in response.headers if h.startswith("x-trust-")]
    assert len(fake_upstream.requests) == 2  # the two answers, no scoring calls
    if backend == "redis":
        assert redis.client().xlen(StreamKeys("trustgate").stream) == 0
    refused = samples(server)[
        ("trustgate_client_overrides_refused_total", frozenset({"setting": "mode", "requested": "sync"}.items()))
    ]
    assert refused == 2


def test_a_client_may_lower_scoring_but_not_raise_async_to_sync(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = operator_config(fake_upstream.url, mode="async")  # type: ignore[attr-defined]
    server = start_gateway(config, scorers=[AskingScorer("bc", 0.9)])
    raised = chat(server, MASTER_KEY, headers={"x-trustgate-mode": "sync"})
    assert raised.headers["x-trust-status"] == "pending"  # stayed async: no wait, no score in the headers
    lowered = chat(server, MASTER_KEY, headers={"x-trustgate-mode": "off"})
    assert "x-trust-id" not in lowered.headers


def test_allow_client_mode_per_key_and_per_model(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = operator_config(
        fake_upstream.url,
        mode="async",  # type: ignore[attr-defined]
        per_key={"team-a": {"allow_client_mode": "any"}},
        per_model={"fake": {"mode": "sync", "allow_client_mode": "none"}},
    )
    server = start_gateway(config, scorers=[AskingScorer("bc", 0.9)])
    # per model: sync, and the header may not even lower it; the per-key entry outranks it for team-a
    assert chat(server, "sk-team-b", headers={"x-trustgate-mode": "off"}).headers["x-trust-status"] == "done"
    assert "x-trust-id" not in chat(server, "sk-team-a", headers={"x-trustgate-mode": "off"}).headers


def test_a_client_cannot_raise_the_sample_rate_with_chosen_request_ids(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    server = start_gateway(
        operator_config(fake_upstream.url, sample_rate=0.25),  # type: ignore[attr-defined]
        scorers=[AskingScorer("bc", 0.9)],
    )
    # An id the bare hash always puts in the sample, reused for new questions: each is still a 1-in-4 draw.
    chosen = next(f"req-{i}" for i in range(1000) if in_sample(f"req-{i}", 0.25))
    scored = [
        ("x-trust-id" in chat(server, MASTER_KEY, f"question {n}", headers={"x-request-id": chosen}).headers)
        for n in range(12)
    ]
    assert sum(scored) < len(scored)  # all 12 in the sample by chance: p = 0.25**12 ≈ 6e-8


# --- 3. fallbacks stay within the caller's model list, on both upstream paths --------------------------------


@pytest.mark.parametrize("path", ["passthrough", "litellm"])
def test_a_fallback_to_a_model_the_key_may_not_use_is_skipped(
    path: str, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    working = config["model_list"][0]["litellm_params"]
    config["model_list"] += [
        {
            "model_name": "broken",
            "litellm_params": {
                "model": "openai/gpt-4o-mini",
                "api_base": "http://127.0.0.1:9/v1",
                "api_key": "x",
                "timeout": 2,
            },
        },
        {"model_name": "other", "litellm_params": dict(working)},
    ]
    config["router_settings"]["fallbacks"] = [{"broken": ["other", "fake"]}]
    config["trustgate"] = {
        "passthrough": path == "passthrough",
        "keys": [{"key": "sk-narrow", "name": "narrow", "models": ["fake", "broken"]}],
    }
    server = start_gateway(config)
    narrow = openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-narrow", max_retries=0, timeout=20)
    reply = narrow.chat.completions.create(model="broken", messages=[{"role": "user", "content": "f"}])
    assert reply.choices[0].message.content == "You said: f"  # from `fake`, which the key may use
    assert len(fake_upstream.requests) == 1
    skipped = ("trustgate_fallbacks_skipped_total", frozenset({"model": "broken", "fallback": "other"}.items()))
    assert samples(server)[skipped] == 1

    config["router_settings"]["fallbacks"] = [{"broken": ["other"]}]
    only_other = start_gateway(config)
    narrow = openai.OpenAI(base_url=f"{only_other.url}/v1", api_key="sk-narrow", max_retries=0, timeout=20)
    with pytest.raises(openai.APIStatusError) as caught:
        narrow.chat.completions.create(model="broken", messages=[{"role": "user", "content": "g"}])
    assert caught.value.status_code >= 500  # broken's own failure (litellm reports it as 500); `other` never called
    assert len(fake_upstream.requests) == 1
    master = openai.OpenAI(base_url=f"{only_other.url}/v1", api_key=MASTER_KEY, max_retries=0, timeout=20)
    assert (
        master.chat.completions.create(model="broken", messages=[{"role": "user", "content": "h"}])
        .choices[0]
        .message.content
        == "You said: h"
    )  # a key that may use `other` still falls back to it
