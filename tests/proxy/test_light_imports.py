"""What a gateway loads, and when: each case runs in a fresh interpreter.

A gateway that does not score loads no scoring library. Heavy means seconds of
start-up and hundreds of MB: spaCy, gensim, torch, scikit-learn, matplotlib. A
gateway with scoring off, or one whose Redis workers score, starts (lifespan
included) without them, and so does ``trustgate --help``.

What the litellm path's calls need is loaded at start-up, not by the first call.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import gateway_config
from tests.fake_upstream import FakeUpstream
from tests.fresh_interpreter import printed_by
from tests.redis_server import RedisServer

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("spacy", "gensim", "torch", "sklearn", "matplotlib", "transformers")
SCORING_OFF = {"consistency": {"enabled": False}, "factcheck": {"enabled": False}, "rag": {"enabled": False}}


def _loaded_after(code: str, watched: tuple[str, ...] = HEAVY) -> list[str]:
    """The ``watched`` modules that ``code``, run in a fresh interpreter, left in ``sys.modules``."""
    return list(
        printed_by(
            textwrap.dedent(code)
            + textwrap.dedent(f"""
        import json, sys
        print(json.dumps(sorted(m for m in {watched!r} if m in sys.modules)))
    """)
        )
    )


def _start_and_stop_gateway(config: dict[str, object]) -> str:
    """Code that builds the app for ``config`` and runs its lifespan (start-up and shutdown)."""
    return f"""
        import asyncio
        from proxy import create_app, settings_from_dict

        app = create_app(settings_from_dict({config!r}, {{}}))

        async def start_and_stop():
            async with app.router.lifespan_context(app):
                pass

        asyncio.run(start_and_stop())
    """


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    server = RedisServer(tmp_path).start()
    try:
        yield server.url
    finally:
        server.stop()


def test_importing_the_gateway_loads_no_scoring_library() -> None:
    assert _loaded_after("import proxy.app, trustgate.cli", (*HEAVY, "evaluation")) == []


def test_a_gateway_with_scoring_off_starts_without_them(tmp_path: Path) -> None:
    config = gateway_config(
        "http://127.0.0.1:9", trustgate={"scoring": SCORING_OFF, "store": {"path": str(tmp_path / "records.sqlite3")}}
    )
    assert _loaded_after(_start_and_stop_gateway(config)) == []


def test_a_pass_through_gateway_prices_its_deployments_without_importing_litellm(tmp_path: Path) -> None:
    """Its deployment is priced from litellm's cost map (openai/gpt-4o-mini), read as a file: litellm's import costs
    seconds of start-up and puts its logging filters on every access-log line."""
    config = gateway_config(
        "http://127.0.0.1:9", trustgate={"scoring": SCORING_OFF, "store": {"path": str(tmp_path / "records.sqlite3")}}
    )
    assert _loaded_after(_start_and_stop_gateway(config), ("litellm",)) == []


def test_a_gateway_whose_redis_workers_score_starts_without_them(redis_url: str, tmp_path: Path) -> None:
    """The scorers are configured (workers load them), but the gateway itself only queues jobs."""
    config = gateway_config(
        "http://127.0.0.1:9", trustgate={"scoring": {"queue": {"backend": "redis", "redis_url": redis_url}}}
    )
    assert _loaded_after(_start_and_stop_gateway(config)) == []


def test_trustgate_help_loads_none_of_them() -> None:
    code = """
        import contextlib, io
        from trustgate.cli import main

        with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
            main(["--help"])
    """
    assert _loaded_after(code) == []


def test_the_first_litellm_call_imports_nothing_of_the_openai_sdk(fake_upstream: FakeUpstream) -> None:
    """The SDK's resource modules load with litellm at start-up (``litellm_backend``), not on the first call."""
    api_base = f"{fake_upstream.url}/v1"  # type: ignore[attr-defined]
    imported_by_the_call = printed_by(f"""
        import asyncio, json, sys
        from proxy.upstream.litellm_backend import check_providers
        check_providers([])  # the gateway's start-up imports and sets up litellm through here
        import litellm

        before = set(sys.modules)
        asyncio.run(litellm.acompletion(model="openai/fake", api_base={api_base!r}, api_key="sk-test",
                                        messages=[{{"role": "user", "content": "hello"}}]))
        print(json.dumps(sorted(m for m in set(sys.modules) - before if m.split(".")[0] == "openai")))
    """)
    assert len(fake_upstream.requests) == 1  # the call did reach the upstream
    assert imported_by_the_call == []
