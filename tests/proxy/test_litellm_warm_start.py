"""The first call through litellm after start-up pays no module imports of the OpenAI SDK's.

Run in a fresh interpreter: this test process has long since imported everything.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.fake_upstream import FakeUpstream

FIRST_CALL = """
import asyncio, json, sys
from proxy.upstream.litellm_backend import check_providers
check_providers([])  # the gateway's start-up imports and sets up litellm through here
import litellm
before = set(sys.modules)
asyncio.run(litellm.acompletion(model="openai/fake", api_base=sys.argv[1] + "/v1", api_key="sk-test",
                                messages=[{"role": "user", "content": "hello"}]))
print(json.dumps(sorted(name for name in set(sys.modules) - before if name.split(".")[0] == "openai")))
"""


def test_the_first_litellm_call_imports_nothing_of_the_openai_sdk(fake_upstream: FakeUpstream) -> None:
    url = fake_upstream.url  # type: ignore[attr-defined]
    run = subprocess.run([sys.executable, "-c", FIRST_CALL, url], capture_output=True, text=True,
                         timeout=120, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    assert len(fake_upstream.requests) == 1  # the call did reach the upstream
    assert json.loads(run.stdout.splitlines()[-1]) == []
