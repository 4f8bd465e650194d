"""A reply far over ``max_response_bytes`` is refused as it streams in, never held whole.

The gateway runs as a real process so that its peak resident memory can be
read from the kernel: it must not grow by anything near the reply's size, on
either upstream path.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import yaml

from tests.conftest import MASTER_KEY
from tests.e2e.gateway_process import GatewayProcess, free_port, serve_config
from tests.fake_upstream import FakeUpstream
from tests.proxy.upstream.both_paths import PATHS, openai_error, path_config

pytestmark = pytest.mark.integration

BODY_BYTES = 50_000_000
CAP_BYTES = 1_000_000
NO_SCORERS = {name: {"enabled": False} for name in ("consistency", "factcheck", "rag", "logprob")}


def chat(gateway: GatewayProcess, content: str) -> httpx.Response:
    body = {"model": "fake", "messages": [{"role": "user", "content": content}]}
    return httpx.post(
        f"{gateway.url}/v1/chat/completions", json=body, headers={"authorization": f"Bearer {MASTER_KEY}"}, timeout=60
    )


@pytest.mark.parametrize("sent", ["[unsized]", "[unsized:gzip]"], ids=["chunked", "gzip-if-asked"])
@pytest.mark.parametrize("path", PATHS)
def test_a_50_mb_reply_is_refused_without_the_gateway_holding_it(
    path: str, sent: str, fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    """Sent in 64 KiB pieces without a Content-Length: only reading it counts its size.

    Compressed, the reply is a fraction of the cap on the wire; the gateway asks
    for it uncompressed, so that what it counts is what it would hold.
    """
    config = path_config(
        fake_upstream,
        path,
        upstream={"max_response_bytes": CAP_BYTES},
        scoring=NO_SCORERS,
        server={"port": free_port()},
        store={"path": str(tmp_path / "records.sqlite3")},
    )
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(config))
    with serve_config(config_file, timeout=120) as gateway:
        # Lazy imports and pools, an answer's and a refusal's, before measuring.
        assert chat(gateway, "warm up").status_code == 200
        assert chat(gateway, f"[big:{2 * CAP_BYTES}] {sent}").status_code == 502
        before = gateway.peak_rss_bytes()
        error = openai_error(chat(gateway, f"[big:{BODY_BYTES}] {sent}"), 502)
        grown = gateway.peak_rss_bytes() - before
    assert error["code"] == "upstream_reply_too_large"
    assert grown < BODY_BYTES // 5, f"peak RSS grew by {grown / 1e6:.0f} MB for a {BODY_BYTES / 1e6:.0f} MB reply"
