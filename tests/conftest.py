"""Shared fixtures: the fake upstream and gateways, each a real server on a loopback socket; and the tiers
(tests/tiers.py): every test in exactly one, and a unit test kept from sockets and processes."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from prometheus_client import CollectorRegistry

from proxy import create_app, settings_from_dict
from proxy.server.connections import server_options
from tests.fake_upstream import FakeUpstream, echo, never
from tests.servers import ServerThread
from tests.tiers import MisTiered, UnitGuard, tier_problem

MASTER_KEY = "sk-test-master"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test outside the tiers, or in several, stops the run before anything runs."""
    problems = [
        f"{item.nodeid}: {problem}" for item in items if (problem := tier_problem(m.name for m in item.iter_markers()))
    ]
    if problems:
        raise pytest.UsageError("every test is in exactly one tier (tests/tiers.py):\n  " + "\n  ".join(problems))


_UNIT_GUARD = UnitGuard()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    """Armed before the test's fixtures are set up: a session-wide server a unit test would start counts too."""
    _UNIT_GUARD.disarm()
    if item.get_closest_marker("unit") is not None:
        _UNIT_GUARD.arm()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Fails a unit test whose code swallowed the guard's refusal (a retry loop that catches every error)."""
    result = yield
    if refused := _UNIT_GUARD.refused:
        raise MisTiered(f"a unit test {refused[0]}: mark it integration (tests/tiers.py)")
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    try:
        return (yield)
    finally:
        _UNIT_GUARD.disarm()


def sdk_client(server: ServerThread, key: str = MASTER_KEY, **headers: str) -> openai.OpenAI:
    """An OpenAI SDK client of ``server``, closed when the test ends: one left to the garbage collector can leave
    its sockets unclosed (a ResourceWarning, which fails whichever test it lands in)."""
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0, timeout=30, default_headers=headers)
    return client


# Every OpenAI SDK client a test makes, however it makes it (``sdk_client`` or inline), is closed when the test
# ends: a test that builds one inline and drops it leaves its pooled socket to the garbage
# collector, whose finalizers may reach the socket before the client's own close.
_OPENED: list[openai.OpenAI] = []  # held until the test ends: the collector cannot take one before it is closed
_sdk_init = openai.OpenAI.__init__


def _tracked_init(self: openai.OpenAI, *args: Any, **kwargs: Any) -> None:
    _sdk_init(self, *args, **kwargs)
    _OPENED.append(self)


openai.OpenAI.__init__ = _tracked_init  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _close_sdk_clients() -> Iterator[None]:
    yield
    while _OPENED:
        _OPENED.pop().close()


@pytest.fixture(scope="session")
def _fake_server() -> Iterator[tuple[FakeUpstream, ServerThread]]:
    fake = FakeUpstream()
    with ServerThread(fake.app()) as server:
        yield fake, server


@pytest.fixture
def fake_upstream(_fake_server: tuple[FakeUpstream, ServerThread]) -> Iterator[FakeUpstream]:
    """The session's fake upstream, reset to its echo behaviour for each test."""
    fake, server = _fake_server
    fake.responder, fake.api_key, fake.delay_ms, fake.without_logprobs = echo, None, 0.0, False
    fake.calls_tools = never
    fake.logprobs_need_top = False
    fake.token_ms = 0.0
    fake.responses_supported, fake.rate_limited, fake.retry_after = True, 0, None
    fake.requests.clear()
    fake.answered.clear()
    fake.headers.clear()
    fake.stream_disconnects = 0
    fake.model_listings = 0
    fake.disconnects = 0
    fake.url = server.url  # type: ignore[attr-defined]
    yield fake


def gateway_config(upstream_url: str, **overrides: Any) -> dict[str, Any]:
    """A config dict as a user would write it, pointing model ``fake`` at the fake upstream.

    The deployment names an OpenAI catalog model so that litellm's Router (the
    non-pass-through path) forwards every OpenAI parameter: for models outside
    its catalog litellm drops ``user`` on purpose.
    """
    config: dict[str, Any] = {
        "model_list": [
            {
                "model_name": "fake",
                "litellm_params": {
                    "model": "openai/gpt-4o-mini",
                    "api_base": f"{upstream_url}/v1",
                    "api_key": "sk-upstream-secret",
                    "timeout": 5,
                },
            }
        ],
        "router_settings": {"num_retries": 0, "timeout": 5},
        "general_settings": {"master_key": MASTER_KEY},
    }
    config.update(overrides)
    return config


@contextlib.contextmanager
def _gateways(folder: Path) -> Iterator[Callable[..., ServerThread]]:
    """A factory of gateways whose records go under ``folder``; every gateway it started stops when it closes."""
    started: list[ServerThread] = []

    def start(config: dict[str, Any], environ: dict[str, str] | None = None, **app_args: Any) -> ServerThread:
        section = config.setdefault("trustgate", {})
        section.setdefault("store", {"path": str(folder / f"records-{len(started)}.sqlite3")})
        app_args.setdefault("scorers", [])
        settings = settings_from_dict(config, environ or {})
        app = create_app(settings, registry=CollectorRegistry(), **app_args)
        # A bound for a loaded machine: the real scorers load in the local scoring worker before the start ends.
        server = ServerThread(app, **server_options(settings.trustgate.server)).start(timeout=180)
        server.app = app  # type: ignore[attr-defined]
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.stop()


@pytest.fixture
def start_gateway(tmp_path: Path) -> Iterator[Callable[..., ServerThread]]:
    """Factory: start a gateway for a config dict; returns the running server (``.app`` attached).

    Its trust records go to a fresh SQLite file under ``tmp_path`` unless the config names one;
    keyword arguments go to ``create_app`` (``scorers=``, ``telemetry=``).
    """
    with _gateways(tmp_path) as start:
        yield start


@pytest.fixture(scope="module")
def start_module_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., ServerThread]]:
    """``start_gateway`` for a module's tests to share: the gateways it starts run until the module's last test.

    For a gateway whose start is costly (the real scorers load for a minute on 2 cores) and whose tests only
    send it requests; the session's fake upstream is at ``fake_upstream_url``.
    """
    with _gateways(tmp_path_factory.mktemp("gateways")) as start:
        yield start


@pytest.fixture(scope="session")
def fake_upstream_url(_fake_server: tuple[FakeUpstream, ServerThread]) -> str:
    """The session's fake upstream's address, for gateways that outlive one test (the ``fake_upstream`` fixture
    still resets its behaviour for each test)."""
    return _fake_server[1].url


@pytest.fixture
def gateway(fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]) -> ServerThread:
    return start_gateway(gateway_config(fake_upstream.url))  # type: ignore[attr-defined]
