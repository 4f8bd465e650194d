"""A gateway that does not score loads no scoring library: each case runs in a fresh interpreter.

Heavy means seconds of start-up and hundreds of MB: spaCy, gensim, torch,
scikit-learn, matplotlib. A gateway with scoring off, or one whose Redis
workers score, starts (lifespan included) without them, and so does
``trustgate --help``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import gateway_config
from tests.redis_server import RedisServer

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("spacy", "gensim", "torch", "sklearn", "matplotlib", "transformers")
SCORING_OFF = {"consistency": {"enabled": False}, "factcheck": {"enabled": False}, "rag": {"enabled": False}}


def _loaded_after(code: str, watched: tuple[str, ...] = HEAVY) -> list[str]:
    """Run ``code`` in a fresh interpreter; the ``watched`` modules it left in ``sys.modules``."""
    probe = textwrap.dedent(code) + textwrap.dedent(f"""
        import json, sys
        print(json.dumps(sorted(m for m in {watched!r} if m in sys.modules)))
    """)
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                               "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


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
    assert _loaded_after("import proxy.server.app, trustgate.cli", (*HEAVY, "evaluation")) == []


def test_a_gateway_with_scoring_off_starts_without_them(tmp_path: Path) -> None:
    config = gateway_config("http://127.0.0.1:9", trustgate={
        "scoring": SCORING_OFF, "store": {"path": str(tmp_path / "records.sqlite3")}})
    assert _loaded_after(_start_and_stop_gateway(config)) == []


def test_a_gateway_whose_redis_workers_score_starts_without_them(redis_url: str, tmp_path: Path) -> None:
    """The scorers are configured (workers load them), but the gateway itself only queues jobs."""
    config = gateway_config("http://127.0.0.1:9", trustgate={
        "scoring": {"queue": {"backend": "redis", "redis_url": redis_url}}})
    assert _loaded_after(_start_and_stop_gateway(config)) == []


def test_trustgate_help_loads_none_of_them() -> None:
    code = """
        import contextlib, io
        from trustgate.cli import main

        with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
            main(["--help"])
    """
    assert _loaded_after(code) == []
