"""A tiny OTLP collector for the tests: receives traces and logs over OTLP/HTTP or OTLP/gRPC, decodes them
with the opentelemetry-proto types, and keeps what arrived (and the request headers) for the test to read.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.servers import ServerThread

__all__ = ["Received", "grpc_receiver", "http_receiver"]

PROTOBUF = "application/x-protobuf"


@dataclass
class Received:
    traces: list[ExportTraceServiceRequest] = field(default_factory=list)
    logs: list[ExportLogsServiceRequest] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def spans(self) -> dict[str, dict[str, Any]]:
        """Every span received, by name: its kind and attributes (plain Python values)."""
        with self._lock:
            return {
                span.name: {
                    "kind": span.kind,
                    "attributes": _attributes(span.attributes),
                    "trace_id": span.trace_id.hex(),
                }
                for request in self.traces
                for resource in request.resource_spans
                for scope in resource.scope_spans
                for span in scope.spans
            }

    def resources(self) -> list[dict[str, Any]]:
        """The resource attributes of every batch received (traces and logs)."""
        with self._lock:
            return [
                _attributes(batch.resource.attributes)
                for batch in [
                    *(b for r in self.traces for b in r.resource_spans),
                    *(b for r in self.logs for b in r.resource_logs),
                ]
            ]

    def events(self) -> list[dict[str, Any]]:
        """Every log record received: its event name and attributes."""
        with self._lock:
            return [
                {
                    "event_name": record.event_name,
                    "attributes": _attributes(record.attributes),
                    "trace_id": record.trace_id.hex(),
                }
                for request in self.logs
                for resource in request.resource_logs
                for scope in resource.scope_logs
                for record in scope.log_records
            ]

    def add(self, request: ExportTraceServiceRequest | ExportLogsServiceRequest, headers: dict[str, str]) -> None:
        with self._lock:
            (self.traces if isinstance(request, ExportTraceServiceRequest) else self.logs).append(request)
            self.headers.append(headers)


def _attributes(values: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for item in values:
        kind = item.value.WhichOneof("value")
        found[item.key] = getattr(item.value, kind) if kind else None
    return found


@contextlib.contextmanager
def http_receiver() -> Iterator[tuple[str, Received]]:
    """OTLP/HTTP (protobuf) on a loopback port: yields its base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it."""
    received = Received()

    async def traces(request: Request) -> Response:
        received.add(ExportTraceServiceRequest.FromString(await request.body()), dict(request.headers))
        return Response(ExportTraceServiceResponse().SerializeToString(), media_type=PROTOBUF)

    async def logs(request: Request) -> Response:
        received.add(ExportLogsServiceRequest.FromString(await request.body()), dict(request.headers))
        return Response(ExportLogsServiceResponse().SerializeToString(), media_type=PROTOBUF)

    app = Starlette(routes=[Route("/v1/traces", traces, methods=["POST"]), Route("/v1/logs", logs, methods=["POST"])])
    with ServerThread(app) as server:
        yield server.url, received


@contextlib.contextmanager
def grpc_receiver() -> Iterator[tuple[str, Received]]:
    """OTLP/gRPC on a loopback port (insecure): yields its endpoint URL."""
    import grpc
    from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    received = Received()

    class Traces(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
        def Export(self, request: ExportTraceServiceRequest, context: Any) -> ExportTraceServiceResponse:
            received.add(request, dict(context.invocation_metadata()))
            return ExportTraceServiceResponse()

    class Logs(logs_service_pb2_grpc.LogsServiceServicer):  # type: ignore[misc]
        def Export(self, request: ExportLogsServiceRequest, context: Any) -> ExportLogsServiceResponse:
            received.add(request, dict(context.invocation_metadata()))
            return ExportLogsServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), server)
    logs_service_pb2_grpc.add_LogsServiceServicer_to_server(Logs(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"http://127.0.0.1:{port}", received
    finally:
        server.stop(grace=None)
