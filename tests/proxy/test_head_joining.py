"""A response's head goes out in one write with its body (``proxy.server.head_joining``), never later than the
end of the event loop's turn, and never out of order."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from proxy.server.head_joining import HeadJoiningTransport
from tests.conftest import MASTER_KEY
from tests.servers import ServerThread

HEAD = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n"


class Recording:
    """A transport that records each write (one ``send()`` each) and whether it was closed or aborted."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.ended: str | None = None

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.ended = "closed"

    def abort(self) -> None:
        self.ended = "aborted"

    def get_extra_info(self, name: str) -> Any:
        return f"extra {name}"


def joined(scenario: Any) -> Recording:
    async def run() -> Recording:
        recording = Recording()
        await scenario(HeadJoiningTransport(recording, asyncio.get_running_loop()), recording)  # type: ignore[arg-type]
        return recording

    return asyncio.run(run())


def test_a_head_and_its_body_go_out_in_one_write() -> None:
    async def scenario(transport: HeadJoiningTransport, recording: Recording) -> None:
        transport.write(HEAD)
        transport.write(b"")  # h11's end of a sized body
        transport.write(b"ok")
        assert recording.writes == [HEAD + b"ok"]
        await asyncio.sleep(0)  # the end of the turn finds nothing held
        assert recording.writes == [HEAD + b"ok"]

    joined(scenario)


def test_a_head_with_nothing_after_it_goes_out_at_the_end_of_the_turn() -> None:
    async def scenario(transport: HeadJoiningTransport, recording: Recording) -> None:
        transport.write(HEAD)
        assert recording.writes == []
        await asyncio.sleep(0)
        assert recording.writes == [HEAD]
        transport.write(b"5\r\nlater\r\n")  # a stream's event, later: written as it comes
        assert recording.writes == [HEAD, b"5\r\nlater\r\n"]

    joined(scenario)


def test_closing_sends_a_held_head_first_and_abort_drops_it() -> None:
    async def close(transport: HeadJoiningTransport, recording: Recording) -> None:
        transport.write(HEAD)
        transport.close()
        assert (recording.writes, recording.ended) == ([HEAD], "closed")
        await asyncio.sleep(0)
        assert recording.writes == [HEAD]  # not twice

    async def abort(transport: HeadJoiningTransport, recording: Recording) -> None:
        transport.write(HEAD)
        transport.abort()
        await asyncio.sleep(0)
        assert (recording.writes, recording.ended) == ([], "aborted")

    joined(close)
    joined(abort)


def test_bodies_are_written_at_once_and_the_rest_passes_through() -> None:
    async def scenario(transport: HeadJoiningTransport, recording: Recording) -> None:
        transport.write(b"body bytes")
        transport.writelines([b"a", b"b"])
        assert recording.writes == [b"body bytes", b"ab"]
        assert transport.get_extra_info("peername") == "extra peername"

    joined(scenario)


def test_the_gateway_answers_whole_replies_and_streams_over_the_wire(gateway: ServerThread) -> None:
    auth = {"authorization": f"Bearer {MASTER_KEY}"}
    with httpx.Client(base_url=gateway.url, headers=auth) as client:  # one kept-alive connection
        for stream in (False, True, False):
            body = {"model": "fake", "messages": [{"role": "user", "content": "a b"}], "stream": stream}
            response = client.post("/v1/chat/completions", json=body)
            assert response.status_code == 200
            assert response.text.endswith("data: [DONE]\n\n") if stream else response.json()["choices"]
        assert client.get("/health/liveliness").status_code == 200
