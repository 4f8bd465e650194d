"""Sync first on the embedded default with the real local model: sync requests right after async ones are scored.

A real ``trustgate serve`` on the default config (llama.cpp with SmolLM2, the
real scorers, one model slot). Five async requests, then ten sync ones: at
least nine come back ``done`` within ``sync_timeout_s`` (``pending`` otherwise),
the async jobs are all scored in the end (the first sync job before the last of
them), and the passing is counted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.gateway_process import serve_default_config
from tests.e2e.sync_after_async import overtaken, sync_after_async, wait_all_final
from tests.e2e.test_trust_scores import DATA_DIR

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (DATA_DIR / "factcheck" / "index").exists() or not (DATA_DIR / "consistency" / "vectors.bin").exists(),
        reason="scoring assets not built: `make install` builds them",
    ),
]


def test_sync_requests_right_after_async_ones_get_their_scores(tmp_path: Path) -> None:
    with serve_default_config(tmp_path) as gateway:
        run = sync_after_async(gateway.url)
        replies = [(r.status, round(r.seconds, 1)) for r in run.sync]
        print(f"sync after async: {run.done} of {len(run.sync)} done; (status, seconds): {replies}")
        assert run.done >= 9, replies
        backlog = wait_all_final(gateway.url, run.async_ids)
        assert [r["status"] for r in backlog] == ["done"] * len(run.async_ids)
        # The first sync job came while async ones were queued: it was scored before the last of them.
        first = wait_all_final(gateway.url, [run.sync[0].record_id])[0]
        assert first["finished_at"] < max(r["finished_at"] for r in backlog)
        assert overtaken(gateway.url) > 0
