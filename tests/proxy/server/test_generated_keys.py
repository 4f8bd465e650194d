"""Keys made at run time, over real sockets: made, used, changed, listed, deleted and refused, in SQLite and in
Redis, across a restart and across two gateways on one Redis; on both upstream paths; only by the master key.

Bodies are shaped as LiteLLM's proxy documents them (its ``/key/*`` docstrings and request types); the answers
carry its response fields.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.proxy.server.scorers import FixedScorer
from tests.redis_server import RedisServer
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

PLAIN_KEY, AUDITOR_KEY = "sk-plain-config-key", "sk-auditor-config-key"
# LiteLLM's /key/generate example, every field of the list set.
LITELLM_GENERATE = {
    "models": ["fake"],
    "max_budget": 10.0,
    "budget_duration": "30d",
    "rpm_limit": 100,
    "tpm_limit": 10000,
    "duration": "30d",
    "key_alias": "team-a",
    "metadata": {"team": "core-infra", "app": "app2", "email": "ishaan@berri.ai"},
}
# What LiteLLM's own clients send beside the fields set: its defaults, which ask for nothing.
LITELLM_DEFAULTS = {
    "spend": 0,
    "user_id": None,
    "team_id": None,
    "max_parallel_requests": None,
    "allowed_cache_controls": [],
    "config": {},
    "permissions": {},
    "model_max_budget": {},
    "aliases": {},
    "key_type": "default",
    "send_invite_email": False,
    "auto_rotate": False,
}


def call(server: ServerThread, method: str, path: str, key: str = MASTER_KEY, **kwargs: Any) -> httpx.Response:
    return httpx.request(
        method, f"{server.url}{path}", headers={"authorization": f"Bearer {key}"}, timeout=30, **kwargs
    )


def generate(server: ServerThread, body: dict[str, Any], key: str = MASTER_KEY) -> dict[str, Any]:
    response = call(server, "POST", "/key/generate", key, json=body)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def chat(server: ServerThread, key: str, model: str = "fake", **headers: str) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/chat/completions",
        headers={"authorization": f"Bearer {key}", **headers},
        json={"model": model, "messages": [{"role": "user", "content": "What is the capital of France?"}]},
        timeout=30,
    )


StoreConfig = Callable[[dict[str, Any]], dict[str, Any]]


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreConfig]:
    """A config's key store: the record store's SQLite file, or (for replicas) Redis; the same for every gateway
    a test starts with it."""
    if request.param == "sqlite":
        path = str(tmp_path / "shared-store.sqlite3")
        yield lambda config: {**config, "trustgate": {**config.get("trustgate", {}), "store": {"path": path}}}
        return
    redis = RedisServer(tmp_path).start()
    queue = {"backend": "redis", "redis_url": redis.url, "scorer_timeout_s": 10}
    yield lambda config: {
        **config,
        "trustgate": {**config.get("trustgate", {}), "scoring": {"mode": "off", "queue": queue}},
    }
    redis.stop()


def keyed_config(upstream_url: str, **trustgate: Any) -> dict[str, Any]:
    """The fake upstream behind a master key, a plain config key and an admin one (model ``other`` besides)."""
    config = gateway_config(upstream_url)
    config["model_list"].append(
        {"model_name": "other", "litellm_params": {**config["model_list"][0]["litellm_params"]}}
    )
    config["trustgate"] = {
        "keys": [
            {"key": PLAIN_KEY, "name": "plain"},
            {"key": AUDITOR_KEY, "name": "auditor", "admin": True},
        ],
        **trustgate,
    }
    return config


@pytest.mark.parametrize("passthrough", [True, False], ids=["passthrough", "litellm"])
def test_a_key_is_made_used_changed_listed_and_deleted(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], store: StoreConfig, passthrough: bool
) -> None:
    gateway = start_gateway(store(keyed_config(fake_upstream.url, passthrough=passthrough)))  # type: ignore[attr-defined]
    before = time.time()
    made = generate(gateway, {**LITELLM_DEFAULTS, **LITELLM_GENERATE})
    key, token = made["key"], made["token"]
    assert key.startswith("sk-") and len(key) > 40
    assert made["token_id"] == token and len(token) == 64 and key not in token
    assert made["key_name"] == f"sk-...{key[-4:]}"
    assert made["key_alias"] == "team-a" and made["name"] == "team-a"
    assert made["models"] == ["fake"] and made["metadata"] == LITELLM_GENERATE["metadata"]
    assert (made["max_budget"], made["budget_duration"]) == (10.0, "30d")
    assert (made["rpm_limit"], made["tpm_limit"]) == (100, 10000)
    expires = datetime.fromisoformat(made["expires"]).timestamp()
    assert before + 30 * 86400 - 5 < expires < time.time() + 30 * 86400 + 5
    assert made["status"] == "active" and made["blocked"] is False

    answered = chat(gateway, key)
    assert answered.status_code == 200, answered.text
    assert fake_upstream.requests, "the key's request reached the upstream"
    refused = chat(gateway, key, model="other")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "model_not_allowed"

    changed = call(gateway, "POST", "/key/update", json={"key": token, "models": [], "rpm_limit": 5})
    assert changed.status_code == 200, changed.text
    assert changed.json()["key"] == token and changed.json()["models"] == [] and changed.json()["rpm_limit"] == 5
    assert changed.json()["tpm_limit"] == 10000, "a field left out keeps its value"
    assert chat(gateway, key, model="other").status_code == 200, "no models: every model, as LiteLLM's []"

    blocked = call(gateway, "POST", "/key/update", json={"key_alias": "team-a", "blocked": True})
    assert blocked.status_code == 200 and blocked.json()["status"] == "revoked"
    assert chat(gateway, key).json()["error"]["code"] == "key_blocked"
    call(gateway, "POST", "/key/update", json={"key": token, "blocked": None})
    assert chat(gateway, key).status_code == 200, "an explicit null clears a field"

    # LiteLLM's /key/update example, as its docstring writes it (its trailing comma aside)
    documented = {
        "key": key,
        "key_alias": "team-a",
        "user_id": "user-1234",
        "team_id": "team-1234",
        "max_budget": 100,
        "metadata": {"any_key": "any-val"},
    }
    updated = call(gateway, "POST", "/key/update", json=documented)
    assert updated.status_code == 200, updated.text
    assert updated.json()["metadata"] == {"any_key": "any-val"}, "metadata is replaced whole, as LiteLLM does"
    assert (updated.json()["user_id"], updated.json()["team_id"], updated.json()["max_budget"]) == (
        "user-1234",
        "team-1234",
        100,
    )
    assert call(gateway, "GET", "/key/list", params={"team_id": "team-1234"}).json()["keys"] == [token]
    assert call(gateway, "GET", "/key/list", params={"user_id": "someone-else"}).json()["keys"] == []

    info = call(gateway, "GET", "/key/info", params={"key": token})
    assert info.status_code == 200
    assert info.json()["key"] == token
    assert info.json()["info"]["key_alias"] == "team-a" and info.json()["info"]["rpm_limit"] == 5
    assert "token" not in info.json()["info"]

    listed = call(gateway, "GET", "/key/list").json()
    assert listed["keys"] == [token]
    assert (listed["total_count"], listed["current_page"], listed["total_pages"]) == (1, 1, 1)
    full = call(gateway, "GET", "/key/list", params={"return_full_object": "true", "key_alias": "team-a"}).json()
    assert [entry["token"] for entry in full["keys"]] == [token] and full["keys"][0]["key_alias"] == "team-a"

    deleted = call(gateway, "POST", "/key/delete", json={"keys": [token]})
    assert deleted.status_code == 200 and deleted.json() == {"deleted_keys": [token]}
    gone = chat(gateway, key)
    assert gone.status_code == 401 and gone.json()["error"]["code"] == "invalid_api_key"
    assert call(gateway, "GET", "/key/info", params={"key": token}).status_code == 404
    assert call(gateway, "GET", "/key/list").json()["keys"] == []
    assert chat(gateway, PLAIN_KEY).status_code == 200, "configured keys keep working beside them"


def test_keys_outlive_a_restart(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], store: StoreConfig
) -> None:
    config = keyed_config(fake_upstream.url)  # type: ignore[attr-defined]
    first = start_gateway(store(config))
    kept = generate(first, {"key_alias": "kept"})
    dropped = generate(first, {"key_alias": "dropped"})
    assert chat(first, dropped["key"]).status_code == 200
    call(first, "POST", "/key/delete", json={"key_aliases": ["dropped"]})
    first.stop()

    second = start_gateway(store(config))
    assert chat(second, kept["key"]).status_code == 200
    assert chat(second, dropped["key"]).status_code == 401
    assert call(second, "GET", "/key/list").json()["keys"] == [kept["token"]]


def test_two_gateways_on_one_redis_agree_at_once(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], redis_server: RedisServer
) -> None:
    config = keyed_config(  # type: ignore[attr-defined]
        fake_upstream.url,
        scoring={"mode": "off", "queue": {"backend": "redis", "redis_url": redis_server.url, "scorer_timeout_s": 10}},
    )
    one, two = start_gateway(config), start_gateway(config)
    made = generate(one, {"key_alias": "shared", "models": ["fake"]})
    assert chat(two, made["key"]).status_code == 200, "made on one, known on the other at once"
    assert chat(one, made["key"]).status_code == 200  # now cached on both

    call(two, "POST", "/key/update", json={"key": made["token"], "models": ["other"]})
    assert chat(one, made["key"]).json()["error"]["code"] == "model_not_allowed", "changed on one, on both at once"
    assert chat(one, made["key"], model="other").status_code == 200

    call(one, "POST", "/key/delete", json={"keys": [made["key"]]})
    refused = chat(two, made["key"], model="other")
    assert refused.status_code == 401, "deleted on one, refused by the other at once"
    assert call(two, "GET", "/key/list").json()["keys"] == []


def test_only_the_master_key_manages_keys(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    gateway = start_gateway(keyed_config(fake_upstream.url))  # type: ignore[attr-defined]
    made = generate(gateway, {"key_alias": "generated"})
    writes = [
        ("POST", "/key/generate", {"json": {}}),
        ("POST", "/key/update", {"json": {"key": made["token"], "rpm_limit": 1}}),
        ("POST", "/key/delete", {"json": {"keys": [made["token"]]}}),
    ]
    reads = [("GET", "/key/info", {"params": {"key": made["token"]}}), ("GET", "/key/list", {})]
    for method, path, args in writes + reads:
        for key in (PLAIN_KEY, made["key"]):
            refused = call(gateway, method, path, key, **args)
            assert refused.status_code == 403, (path, refused.text)
            assert refused.json()["error"]["code"] == "master_key_required"
        assert call(gateway, method, path, "sk-nobody", **args).status_code == 401
    for method, path, args in writes:
        assert call(gateway, method, path, AUDITOR_KEY, **args).status_code == 403, "admin keys only read"
    for method, path, args in reads:
        assert call(gateway, method, path, AUDITOR_KEY, **args).status_code == 200
    assert call(gateway, "GET", "/key/list").json()["keys"] == [made["token"]], "nothing changed"
    assert chat(gateway, made["key"]).status_code == 200


def test_litellm_fields_that_ask_nothing_pass_and_the_others_are_refused(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    gateway = start_gateway(keyed_config(fake_upstream.url))  # type: ignore[attr-defined]
    for body, field in [
        ({"organization_id": "org-1"}, "organization_id"),
        ({"model_max_budget": {"fake": {"budget_limit": 1, "time_period": "1d"}}}, "model_max_budget"),
        ({"spend": 5}, "spend"),
        ({"key": "sk-chosen-by-the-client"}, "key"),
        ({"modelz": ["fake"]}, "modelz"),
        ({"models": ["no-such-model"]}, "models"),
        ({"duration": "forever"}, "duration"),
        ({"budget_duration": "1d"}, "budget_duration"),
        ({"max_budget": -1}, "max_budget"),
        ({"key_alias": "plain"}, "key_alias"),
        ({"key_alias": "master"}, "key_alias"),
    ]:
        refused = call(gateway, "POST", "/key/generate", json=body)
        assert refused.status_code in (400, 409), (body, refused.text)
        assert field in refused.json()["error"]["message"] + str(refused.json()["error"]["param"]), refused.text
    assert call(gateway, "GET", "/key/list").json()["keys"] == [], "a refused key leaves nothing behind"

    generate(gateway, {**LITELLM_DEFAULTS, "key_alias": "once"})
    again = call(gateway, "POST", "/key/generate", json={"key_alias": "once"})
    assert again.status_code == 409 and again.json()["error"]["code"] == "key_alias_taken"
    renamed = call(gateway, "POST", "/key/update", json={"key_alias": "once", "rpm_limit": 3})
    assert renamed.status_code == 200, "key_alias alone names the key to update"
    token = renamed.json()["key"]
    moved = call(gateway, "POST", "/key/update", json={"key": token, "key_alias": "twice"})
    assert moved.status_code == 400 and moved.json()["error"]["code"] == "key_alias_immutable"
    partly = call(gateway, "POST", "/key/delete", json={"keys": [token, "0" * 64]})
    assert partly.status_code == 404
    assert call(gateway, "GET", "/key/list").json()["keys"] == [token], "a delete that cannot be whole deletes none"


def test_an_expired_key_is_refused(fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]) -> None:
    gateway = start_gateway(keyed_config(fake_upstream.url))  # type: ignore[attr-defined]
    short = generate(gateway, {"duration": "1s"})
    lasting = generate(gateway, {"duration": None})
    assert lasting["expires"] is None
    time.sleep(1.2)
    refused = chat(gateway, short["key"])
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "key_expired"
    assert call(gateway, "GET", "/key/list", params={"status": "expired"}).json()["keys"] == [short["token"]]
    extended = call(gateway, "POST", "/key/update", json={"key": short["token"], "duration": "-1"})
    assert extended.json()["expires"] is None
    assert chat(gateway, short["key"]).status_code == 200
    assert chat(gateway, lasting["key"]).status_code == 200


def test_no_plaintext_key_is_stored_logged_or_returned_after_its_making(
    fake_upstream: FakeUpstream,
    start_gateway: Callable[..., ServerThread],
    store: StoreConfig,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    config = store(keyed_config(fake_upstream.url))  # type: ignore[attr-defined]
    gateway = start_gateway(config)
    made = generate(gateway, {"key_alias": "secret-holder"})
    key, token = made["key"], made["token"]
    answers = [
        chat(gateway, key),
        call(gateway, "GET", "/key/info", params={"key": key}),  # LiteLLM takes the key itself too
        call(gateway, "POST", "/key/update", json={"key": key, "rpm_limit": 7}),
        call(gateway, "GET", "/key/list", params={"return_full_object": "true"}),
        call(gateway, "GET", "/key/info", params={"key": "sk-" + key[3:-1]}),  # a near miss
    ]
    stored = _stored_bytes(config)
    assert token.encode() in stored and b"secret-holder" in stored, "the store holds the key's token"
    answers += [call(gateway, "POST", "/key/delete", json={"keys": [key]}), chat(gateway, key)]
    assert [answer.status_code for answer in answers] == [200, 200, 200, 200, 404, 200, 401]
    for answer in answers:
        assert key not in answer.text and key[3:] not in answer.text
    assert answers[1].json()["key"] == token and answers[5].json() == {"deleted_keys": [token]}
    # The test's own HTTP client logs the URLs it asks (httpx); every other line is the gateway's.
    logged = "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith(("httpx", "httpcore")))
    assert key not in logged and key[3:] not in logged and token in logged, "the logs name keys by token only"
    for kept in (stored, _stored_bytes(config)):
        assert key.encode() not in kept and key[3:].encode() not in kept


def _stored_bytes(config: dict[str, Any]) -> bytes:
    """Everything the key store holds: the SQLite files, or every Redis key and value."""
    queue = config["trustgate"].get("scoring", {}).get("queue")
    if queue is None:
        path = Path(config["trustgate"]["store"]["path"])
        return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))
    client = redis.Redis.from_url(queue["redis_url"])
    try:
        parts = []
        for name in client.keys("*"):
            parts.append(name)
            kind = client.type(name)
            if kind == b"hash":
                parts += [item for pair in client.hgetall(name).items() for item in pair]
            elif kind == b"string":
                parts.append(client.get(name) or b"")
        return b"\n".join(parts)
    finally:
        client.close()


def test_a_keys_trust_policy_decides_its_requests(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = keyed_config(fake_upstream.url, scoring={"mode": "async", "queue": {"scorer_timeout_s": 5}})  # type: ignore[attr-defined]
    gateway = start_gateway(config, scorers=[FixedScorer()])
    quiet = generate(gateway, {"trust_policy": {"mode": "off"}})
    waiting = generate(gateway, {"trust_policy": {"mode": "sync", "sync_timeout_s": 20}})
    assert waiting["trust_policy"] == {"mode": "sync", "sync_timeout_s": 20.0}

    assert chat(gateway, PLAIN_KEY).headers["x-trust-status"] == "pending", "the config's mode: async"
    assert "x-trust-id" not in chat(gateway, quiet["key"]).headers, "the key's own mode: off"
    assert chat(gateway, waiting["key"]).headers["x-trust-status"] == "done", "the key's own mode: sync"

    for policy, param in [
        ({"on_low_trust": {"action": "block"}}, "trust_policy.on_low_trust"),  # an action needs sync scoring
        ({"mode": "sync", "sync_timeout_s": 1}, "trust_policy.sync_timeout_s"),  # below scorer_timeout_s
        ({"mode": "sometimes"}, "trust_policy.mode"),
        ({"mode": "sync", "escalate": True}, "trust_policy.escalate"),
    ]:
        refused = call(gateway, "POST", "/key/generate", json={"trust_policy": policy})
        assert refused.status_code == 400 and refused.json()["error"]["param"] == param, refused.text
    escalating = {
        "mode": "sync",
        "on_low_trust": {"action": "escalate", "escalate_to": "other", "below": 0.5},
    }
    refused = call(gateway, "POST", "/key/generate", json={"models": ["fake"], "trust_policy": escalating})
    assert "may not use `other`" in refused.json()["error"]["message"], "escalation never widens a key's models"
    assert call(gateway, "POST", "/key/generate", json={"trust_policy": escalating}).status_code == 200


def test_a_gateway_that_scores_nothing_refuses_a_key_asked_to_score(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    gateway = start_gateway(keyed_config(fake_upstream.url))  # type: ignore[attr-defined]  # no scorer
    refused = call(gateway, "POST", "/key/generate", json={"trust_policy": {"mode": "sync"}})
    assert refused.status_code == 400 and "loads no scorer" in refused.json()["error"]["message"]
    assert call(gateway, "POST", "/key/generate", json={"trust_policy": {"mode": "off"}}).status_code == 200


def test_each_store_keeps_names_unique_and_its_size_bounded(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], store: StoreConfig
) -> None:
    config = store(keyed_config(fake_upstream.url, generated_keys={"max_keys": 2}))  # type: ignore[attr-defined]
    gateway = start_gateway(config)
    first = generate(gateway, {"key_alias": "first"})
    taken = call(gateway, "POST", "/key/generate", json={"key_alias": "first"})
    assert taken.status_code == 409 and taken.json()["error"]["code"] == "key_alias_taken"
    generate(gateway, {})
    full = call(gateway, "POST", "/key/generate", json={"key_alias": "third"})
    assert full.status_code == 409 and full.json()["error"]["code"] == "key_limit_reached"
    call(gateway, "POST", "/key/delete", json={"key_aliases": ["first"]})
    again = generate(gateway, {"key_alias": "first"})
    assert again["token"] != first["token"] and chat(gateway, again["key"]).status_code == 200
    assert chat(gateway, first["key"]).status_code == 401, "a name given again is not the old key"


def test_a_name_a_configured_key_takes_later_is_that_keys(
    fake_upstream: FakeUpstream,
    start_gateway: Callable[..., ServerThread],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = keyed_config(fake_upstream.url, store={"path": str(tmp_path / "store.sqlite3")})  # type: ignore[attr-defined]
    first = start_gateway(config)
    made = generate(first, {"key_alias": "later"})
    first.stop()
    config["trustgate"]["keys"].append({"key": "sk-later-config-key", "name": "later"})
    second = start_gateway(config)
    assert "configured keys' now: later" in caplog.text, "named at start-up"
    refused = chat(second, made["key"])
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "key_name_taken"
    assert chat(second, "sk-later-config-key").status_code == 200
    assert call(second, "POST", "/key/delete", json={"key_aliases": ["later"]}).status_code == 200


def test_a_key_store_that_cannot_answer_is_a_503_not_a_refusal(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], redis_server: RedisServer
) -> None:
    config = keyed_config(  # type: ignore[attr-defined]
        fake_upstream.url,
        scoring={"mode": "off", "queue": {"backend": "redis", "redis_url": redis_server.url, "redis_timeout_s": 1}},
    )
    gateway = start_gateway(config)
    made = generate(gateway, {"key_alias": "stranded"})
    redis_server.stop()
    answer = chat(gateway, made["key"])
    assert answer.status_code == 503 and answer.json()["error"]["code"] == "key_store_unavailable"
    listing = call(gateway, "GET", "/key/list")
    assert listing.status_code == 503 and listing.json()["error"]["code"] == "key_store_unavailable"
    metrics = httpx.get(f"{gateway.url}/metrics", timeout=30).text
    assert 'trustgate_store_errors_total{operation="key_lookup"} 1.0' in metrics
    assert 'trustgate_store_errors_total{operation="keys"} 1.0' in metrics
