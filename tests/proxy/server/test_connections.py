"""Clients that hold connections: idle, slowloris heads and bodies, too many sockets, no descriptors left.

Every test talks to a real uvicorn gateway over raw sockets, with short
deadlines so that a cut connection shows within a bounded number of reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
import select
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, closing
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import uvicorn
import yaml
from uvicorn.server import ServerState

from proxy.config.settings import ServerSettings
from proxy.server import connections
from proxy.server.connections import MAX_HEAD_BYTES, GuardedHttpProtocol, guarded_protocol
from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.proxy.metric_samples import samples
from tests.redis_server import free_port
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

DEADLINES = {"header_timeout_s": 0.5, "body_timeout_s": 0.5, "keep_alive_s": 0.5}


def guarded_config(fake: FakeUpstream) -> dict[str, Any]:
    config = gateway_config(fake.url)  # type: ignore[attr-defined]
    config["trustgate"] = {
        "server": {**DEADLINES, "max_connections": 20, "max_connections_per_client": 30, "reserved_connections": 5}
    }
    return config


@pytest.fixture
def guarded(fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]) -> ServerThread:
    return start_gateway(guarded_config(fake_upstream))


def connect(server: ServerThread) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=5)


def closed_within(sock: socket.socket, seconds: float) -> bytes | None:
    """What the server sent before closing, or None if it kept the connection open that long."""
    received = b""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if select.select([sock], [], [], left)[0]:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                return received
            if not chunk:
                return received
            received += chunk
    return None


def test_a_connection_that_sends_nothing_is_closed(guarded: ServerThread) -> None:
    with closing(connect(guarded)) as sock:
        assert closed_within(sock, 5) == b""


def test_a_request_head_sent_byte_by_byte_is_cut(guarded: ServerThread) -> None:
    with closing(connect(guarded)) as sock:
        sock.sendall(b"GET /health/liveness HTTP/1.1\r\nhost: gateway\r\nx-slow: ")
        for _ in range(50):  # 5 s of drip at most; the head deadline is 0.5 s
            try:
                sock.sendall(b"a")
            except (BrokenPipeError, ConnectionResetError):
                break
            if closed_within(sock, 0.1) is not None:
                break
        else:
            pytest.fail("a head dripped one byte per 0.1 s kept its connection for 5 s")


@pytest.fixture
def recording(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], monkeypatch: pytest.MonkeyPatch
) -> tuple[ServerThread, list[list[int]]]:
    """The guarded gateway, and the size of each read its connections make (one list per connection, in order):
    what the server took in, whatever the client managed to write into the kernel's buffers."""
    reads: list[list[int]] = []
    make_protocol = connections.guarded_protocol

    def recording_protocol(settings: ServerSettings) -> type[GuardedHttpProtocol]:
        class Recording(make_protocol(settings)):  # type: ignore[misc, valid-type]
            def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
                self.sizes: list[int] = []
                reads.append(self.sizes)
                super().connection_made(transport)

            def data_received(self, data: bytes) -> None:
                self.sizes.append(len(data))
                super().data_received(data)

        return Recording

    monkeypatch.setattr(connections, "guarded_protocol", recording_protocol)
    return start_gateway(guarded_config(fake_upstream)), reads


def test_a_request_head_beyond_the_size_bound_is_refused_at_once(
    recording: tuple[ServerThread, list[list[int]]],
) -> None:
    """A head that keeps growing is refused at the first read that takes it past the bound, not buffered until
    its deadline: within the 0.5 s head deadline a loopback client could send gigabytes."""
    gateway, reads = recording
    with closing(connect(gateway)) as sock:
        sock.sendall(b"GET /health/liveness HTTP/1.1\r\nhost: gateway\r\nx-big: ")
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            for _ in range(1024):  # 4 MiB, however long it takes; the kernel may buffer much of it
                sock.sendall(b"a" * 4096)
        reply = closed_within(sock, 5)
    assert reply is not None and reply.startswith(b"HTTP/1.1 431"), reply
    assert orjson.loads(reply.partition(b"\r\n\r\n")[2])["error"]["code"] == "request_header_too_large"
    (sizes,) = reads
    counted = sizes[1:]  # the bound counts from the read after the one the head began in
    assert sum(counted[:-1]) <= MAX_HEAD_BYTES < sum(counted), sizes  # the last read crossed it, and was the last


def test_an_oversized_pipelined_head_cuts_the_connection_without_writing_into_a_running_response(
    guarded: ServerThread,
) -> None:
    """While a streamed answer is still going out, the 431 would land inside its body: the connection is cut."""
    with closing(connect(guarded)) as sock:
        sock.sendall(chat_request("[stall-stream] a b", stream=True))
        received = b""
        while b"data: " not in received:
            received += sock.recv(65536)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(b"GET /health/liveness HTTP/1.1\r\nhost: gateway\r\nx-big: ")
            for _ in range(8):
                sock.sendall(b"a" * 4096)
                time.sleep(0.02)  # separate reads
        rest = closed_within(sock, 5)
    assert rest is not None, "the connection stayed open"
    assert b"HTTP/1.1 431" not in received + rest


def test_a_large_request_head_within_the_bound_is_served(guarded: ServerThread) -> None:
    with closing(connect(guarded)) as sock:
        sock.sendall(b"GET /health/liveness HTTP/1.1\r\nhost: gateway\r\nx-token: " + b"a" * 12_000 + b"\r\n\r\n")
        reply = closed_within(sock, 5)
    assert reply is not None and reply.startswith(b"HTTP/1.1 200"), reply


def test_a_body_that_never_completes_gets_408_and_the_connection_closes(guarded: ServerThread) -> None:
    with closing(connect(guarded)) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\n"
            b"authorization: Bearer " + MASTER_KEY.encode() + b'\r\ncontent-length: 100\r\n\r\n{"model"'
        )
        reply = closed_within(sock, 5)
    assert reply is not None, "the connection was still open 5 s after its head"
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408") and b"connection: close" in head.lower()
    assert orjson.loads(body)["error"]["code"] == "request_timeout"


def test_a_body_in_pieces_within_the_deadline_is_read_whole_and_answered(guarded: ServerThread) -> None:
    """Pieces of a body arriving after the handler began reading are timed by ``BodyDeadline``; the whole body
    within the deadline (0.5 s from the head here), the request is answered as any other."""
    body = orjson.dumps({"model": "fake", "messages": [{"role": "user", "content": "in pieces"}]})
    with closing(connect(guarded)) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\n"
            b"authorization: Bearer " + MASTER_KEY.encode() + b"\r\nconnection: close\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body[:10]
        )
        for start in range(10, len(body), 25):
            time.sleep(0.03)
            sock.sendall(body[start : start + 25])
        reply = closed_within(sock, 10)
    assert reply is not None and reply.startswith(b"HTTP/1.1 200"), reply
    assert b"You said: in pieces" in reply


def test_a_client_leaving_mid_body_is_a_499_not_a_server_error(
    guarded: ServerThread, fake_upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR):
        with closing(connect(guarded)) as sock:
            sock.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\n"
                b"authorization: Bearer " + MASTER_KEY.encode() + b'\r\ncontent-length: 100\r\n\r\n{"m'
            )
            time.sleep(0.1)  # the handler is reading the body
        deadline = time.monotonic() + 5
        while _requests_counted(guarded, "499") == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert _requests_counted(guarded, "499") == 1 and _requests_counted(guarded, "500") == 0
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert fake_upstream.requests == []


def _requests_counted(server: ServerThread, status: str) -> float:
    return sum(
        value
        for (name, labels), value in samples(server).items()
        if name == "trustgate_requests_total" and dict(labels).get("status") == status
    )


def test_an_idle_kept_alive_connection_is_closed(guarded: ServerThread) -> None:
    with closing(connect(guarded)) as sock:
        sock.sendall(b"GET /health/liveness HTTP/1.1\r\nhost: gateway\r\n\r\n")
        reply = closed_within(sock, 5)
    assert reply is not None and reply.startswith(b"HTTP/1.1 200")


def test_connections_beyond_the_cap_get_503_and_are_closed(guarded: ServerThread) -> None:
    """20 places, 5 more in the reserve for probes; the 26th connection on is refused at once."""
    with ExitStack() as stack:
        sockets = [stack.enter_context(closing(connect(guarded))) for _ in range(30)]
        refused = [closed_within(sock, 0.3) for sock in sockets[25:]]
        assert all(reply is not None and reply.startswith(b"HTTP/1.1 503") for reply in refused), refused
        body = (refused[0] or b"").partition(b"\r\n\r\n")[2]
        assert orjson.loads(body)["error"]["code"] == "too_many_connections"
        sockets[0].sendall(b"GET /health/liveness HTTP/1.1\r\nhost: gateway\r\n\r\n")
        assert sockets[0].recv(65536).startswith(b"HTTP/1.1 200")  # the first 20 are served
        sockets[20].sendall(b"GET /v1/models HTTP/1.1\r\nhost: gateway\r\n\r\n")  # the reserve: probes only
        assert (closed_within(sockets[20], 5) or b"").startswith(b"HTTP/1.1 503")
        sockets[21].sendall(b"GET /health/liveness HTTP/1.1\r\nhost: gateway\r\n\r\n")
        assert (closed_within(sockets[21], 5) or b"").startswith(b"HTTP/1.1 200")  # answered, then closed
    # Closed connections free their places.
    assert httpx.get(f"{guarded.url}/health/liveness").status_code == 200


@pytest.fixture
def low_fd_gateway(fake_upstream: FakeUpstream, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``python -m trustgate serve`` with 128 file descriptors and no connection cap below that."""
    config: dict[str, Any] = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["trustgate"] = {
        "server": {"max_connections": 10_000, "header_timeout_s": 30},
        "store": {"path": str(tmp_path / "records.sqlite3")},
        "scoring": {"consistency": {"enabled": False}, "factcheck": {"enabled": False}, "rag": {"enabled": False}},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    port = free_port()

    def limit_descriptors() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))

    log = (tmp_path / "gateway.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "trustgate", "serve", "--config", str(path), "--port", str(port), "--no-access-log"],
        stderr=log,
        text=True,
        preexec_fn=limit_descriptors,
        env={**os.environ, "PYTHONPATH": str(Path.cwd())},
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        assert process.poll() is None and time.monotonic() < deadline, "the gateway did not start"
        try:
            if httpx.get(f"{url}/health/liveness").status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.2)
    yield url, tmp_path / "gateway.log"
    process.terminate()
    process.wait(timeout=20)
    log.close()


def test_out_of_descriptors_is_counted_and_logged_rarely(low_fd_gateway: tuple[str, Path]) -> None:
    url, log_path = low_fd_gateway
    port = int(url.rsplit(":", 1)[1])
    with ExitStack() as stack:
        for _ in range(200):  # more than the gateway's 128 descriptors; the backlog holds the rest
            stack.enter_context(closing(socket.create_connection(("127.0.0.1", port), timeout=5)))
        time.sleep(3)  # accept is retried every second: three tries at least
    deadline = time.monotonic() + 20
    while True:  # descriptors are back once the server closed its side of the sockets above
        try:
            metrics = httpx.get(f"{url}/metrics", timeout=5).text
            break
        except httpx.TransportError:
            assert time.monotonic() < deadline, "the gateway did not recover after the clients left"
            time.sleep(0.2)
    errors = [line for line in metrics.splitlines() if line.startswith("trustgate_accept_errors_total")]
    assert errors and float(errors[0].split()[-1]) >= 2, errors
    log = log_path.read_text()  # while serving: asyncio's own retries after shutdown are not the gateway's
    assert "open-files limit (128) is below what trustgate.server.max_connections (10000) needs" in log
    lines = [line for line in log.splitlines() if "cannot accept connections" in line]
    assert len(lines) == 1, log[-3000:]
    assert "Traceback" not in log


# --- one client's streams at the cap -----------------------------------------------------------------------------


def chat_request(content: str, *, stream: bool = False) -> bytes:
    body = orjson.dumps({"model": "fake", "stream": stream, "messages": [{"role": "user", "content": content}]})
    return (
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\n"
        b"authorization: Bearer "
        + MASTER_KEY.encode()
        + b"\r\ncontent-length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )


def stalled_stream(server: ServerThread, source: str) -> socket.socket:
    """A streamed chat request from ``source`` whose upstream sends one chunk and then holds the stream open."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5, source_address=(source, 0))
    sock.sendall(chat_request("[stall-stream]", stream=True))
    assert sock.recv(65536).startswith(b"HTTP/1.1 200")  # the stream is open and being served
    return sock


def client_from(source: str) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=10)


@pytest.fixture
def capped(fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]) -> ServerThread:
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["trustgate"] = {"server": {"max_connections": 4, "max_connections_per_client": 3, "reserved_connections": 2}}
    return start_gateway(config)


def test_one_client_at_its_share_leaves_room_for_others_and_probes(capped: ServerThread) -> None:
    """A holds its 3 places with open streams; its 4th connection serves probes only (a request there is refused),
    B is served, probes answer: from elsewhere, and from A's own address (a node's, where a load balancer's
    traffic is source-NATed to it)."""
    with ExitStack() as stack:
        for _ in range(3):
            stack.enter_context(closing(stalled_stream(capped, "127.0.0.1")))
        with closing(socket.create_connection(("127.0.0.1", capped.port), timeout=5)) as fourth:
            fourth.sendall(chat_request("hello"))
            reply = closed_within(fourth, 5) or b""
        assert reply.startswith(b"HTTP/1.1 503") and b"as many connections as one client may" in reply
        with client_from("127.0.0.1") as same_address:
            assert same_address.get(f"{capped.url}/health/liveness").status_code == 200
            assert same_address.get(f"{capped.url}/health/readiness").status_code == 200
        with client_from("127.0.0.2") as other:
            answer = other.post(
                f"{capped.url}/v1/chat/completions",
                json={"model": "fake", "messages": [{"role": "user", "content": "hello"}]},
                headers={"authorization": f"Bearer {MASTER_KEY}"},
            )
            assert answer.status_code == 200 and answer.json()["choices"][0]["message"]["content"]
        with client_from("127.0.0.3") as probe:
            assert probe.get(f"{capped.url}/health/liveness").status_code == 200


def test_at_the_cap_probes_and_scrapes_still_answer(capped: ServerThread) -> None:
    """The cap (4) is full: A's 3 streams and B's one. Liveness, readiness and /metrics answer from the reserve;
    another request is refused there rather than queued."""
    with ExitStack() as stack:
        for _ in range(3):
            stack.enter_context(closing(stalled_stream(capped, "127.0.0.1")))
        stack.enter_context(closing(stalled_stream(capped, "127.0.0.2")))
        with client_from("127.0.0.3") as probe:
            assert probe.get(f"{capped.url}/health/liveness").json() == {"status": "ok"}
            assert probe.get(f"{capped.url}/health/readiness").status_code == 200
            assert "trustgate_requests_total" in probe.get(f"{capped.url}/metrics").text
            refused = probe.post(
                f"{capped.url}/v1/chat/completions",
                json={"model": "fake", "messages": [{"role": "user", "content": "hello"}]},
                headers={"authorization": f"Bearer {MASTER_KEY}"},
            )
            assert refused.status_code == 503 and refused.json()["error"]["code"] == "too_many_connections"


def test_a_client_at_its_share_gets_two_probe_connections_no_more(capped: ServerThread) -> None:
    """Beyond its share a peer may hold two connections at once (for probes); its next is refused at once."""
    with ExitStack() as stack:
        for _ in range(3):
            stack.enter_context(closing(stalled_stream(capped, "127.0.0.1")))
        idle = [stack.enter_context(closing(connect(capped))) for _ in range(2)]
        with closing(connect(capped)) as third:
            reply = closed_within(third, 5) or b""
        assert reply.startswith(b"HTTP/1.1 503") and b"as many connections as one client may" in reply
        idle[0].sendall(b"GET /metrics HTTP/1.1\r\nhost: gateway\r\n\r\n")
        assert (closed_within(idle[0], 5) or b"").startswith(b"HTTP/1.1 200")  # answered, then closed
        with client_from("127.0.0.2") as other:
            assert other.get(f"{capped.url}/health/liveness").status_code == 200


def test_connections_of_a_listening_socket_made_without_a_protocol_number_get_no_nagle() -> None:
    """A process manager's socket(AF_INET, SOCK_STREAM) says protocol 0, which asyncio's own TCP_NODELAY skips:
    the gateway's protocol turns Nagle's algorithm off itself (else every small write after the first waits for
    the client's delayed ACK)."""

    async def scenario() -> int:
        config = uvicorn.Config(app=lambda scope, receive, send: None, log_level="warning")
        config.load()
        protocol_class = guarded_protocol(ServerSettings())
        made: list[Any] = []

        def protocol() -> Any:
            made.append(protocol_class(config=config, server_state=ServerState(), app_state={}))
            return made[-1]

        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # protocol number 0, as the managers make it
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        server = await asyncio.get_running_loop().create_server(protocol, sock=listener)
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", listener.getsockname()[1])
            while not made or made[0].transport is None:
                await asyncio.sleep(0.01)
            accepted = made[0].transport.get_extra_info("socket")
            assert accepted.proto == 0  # asyncio left it alone
            nodelay = accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            writer.close()
            await writer.wait_closed()
            return int(nodelay)
        finally:
            server.close()
            await server.wait_closed()

    assert asyncio.run(scenario()) == 1
