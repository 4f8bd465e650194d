"""Sync first on the embedded default with the real local model: sync requests sent right after async ones are
scored ahead of them.

A real ``trustgate serve`` on the default config (llama.cpp with SmolLM2, the
real scorers, one model slot). Five async requests, then three sync ones: each
sync job is taken ahead of the async backlog (the first is scored before the
last of the backlog, and the passing is counted), and every job is scored in the
end. How many sync answers beat ``sync_timeout_s`` is the machine's speed as much as
the gateway's: ``bench.embedded_default`` measures it (9 of 10 is its target).
"""

from __future__ import annotations

import pytest

from tests.assets import DATA_DIR
from tests.e2e.gateway_process import GatewayProcess
from tests.e2e.sync_after_async import SYNC_QUESTIONS, overtaken, sync_after_async, wait_all_final

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not (DATA_DIR / "factcheck" / "index").exists() or not (DATA_DIR / "consistency" / "vectors.bin").exists(),
        reason="scoring assets not built: `make install` builds them",
    ),
]


def test_sync_requests_right_after_async_ones_are_scored_ahead_of_them(default_gateway: GatewayProcess) -> None:
    url = default_gateway.url
    overtaken_before = overtaken(url)  # the gateway is shared: count this run's passing only
    run = sync_after_async(url, SYNC_QUESTIONS[:3])
    replies = [(r.status, round(r.seconds, 1)) for r in run.sync]
    print(f"sync after async: {run.done} of {len(run.sync)} done within sync_timeout_s; (status, seconds): {replies}")
    assert {r.status for r in run.sync} <= {"done", "pending"}, replies
    backlog = wait_all_final(url, run.async_ids)
    assert [r["status"] for r in backlog] == ["done"] * len(run.async_ids)
    scored = wait_all_final(url, [r.record_id for r in run.sync])
    assert [r["status"] for r in scored] == ["done"] * len(run.sync)
    # The first sync job came while async ones were queued: it was scored before the last of them.
    assert scored[0]["finished_at"] < max(r["finished_at"] for r in backlog)
    assert overtaken(url) > overtaken_before
