"""Which OpenTelemetry exporters the gateway uses: the standard ``OTEL_*`` variables, the config file over them.

An operator configures OpenTelemetry the same way for every service they run:
``OTEL_TRACES_EXPORTER`` / ``OTEL_LOGS_EXPORTER`` (``otlp``, ``console``,
``none``, or a comma-separated list), ``OTEL_EXPORTER_OTLP_PROTOCOL`` (``grpc``
or ``http/protobuf``, per signal with ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` /
``..._LOGS_PROTOCOL``), endpoint and headers (``OTEL_EXPORTER_OTLP_ENDPOINT``,
``OTEL_EXPORTER_OTLP_HEADERS`` and their per-signal forms, read by the OTLP
exporters themselves) and ``OTEL_SDK_DISABLED``. Setting any exporter or
endpoint variable turns export on; ``trustgate.telemetry`` in the config
overrides each choice. Resolving the choice is a pure function of the
variables and the config; building exporters is the only I/O-adjacent step.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["ExportChoice", "ExportConfigError", "OtlpProtocol", "export_choice", "log_exporters", "span_exporters"]

OtlpProtocol = Literal["grpc", "http/protobuf"]
PROTOCOLS: tuple[OtlpProtocol, ...] = ("grpc", "http/protobuf")
EXPORTERS = ("otlp", "console")
# Any of these set (to anything) means the operator asked for export.
TURNS_EXPORT_ON = (
    "OTEL_TRACES_EXPORTER",
    "OTEL_LOGS_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
)
GRPC_EXTRA = "pip install 'trustgate[otlp-grpc]' (opentelemetry-exporter-otlp-proto-grpc)"


class ExportConfigError(ValueError):
    """An exporter or protocol the gateway does not know: named in one line at start-up."""


@dataclass(frozen=True)
class ExportChoice:
    traces: tuple[str, ...]  # exporter names, in order: "otlp", "console"
    logs: tuple[str, ...]
    traces_protocol: OtlpProtocol
    logs_protocol: OtlpProtocol
    endpoint: str | None = None  # the config's override; None: the exporters read OTEL_EXPORTER_OTLP_*ENDPOINT
    headers: Mapping[str, str] | None = None  # likewise for OTEL_EXPORTER_OTLP_*HEADERS

    @property
    def enabled(self) -> bool:
        return bool(self.traces or self.logs)


def _exporters(value: str, variable: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in value.split(",") if n.strip() and n.strip() != "none")
    unknown = [n for n in names if n not in EXPORTERS]
    if unknown:
        raise ExportConfigError(
            f"{variable}={value}: unknown exporter `{unknown[0]}` (choose from {', '.join(EXPORTERS)}, none)"
        )
    return names


def _protocol(value: str, variable: str) -> OtlpProtocol:
    if value not in PROTOCOLS:
        raise ExportConfigError(f"{variable}={value}: choose grpc or http/protobuf")
    return value


def export_choice(
    environ: Mapping[str, str],
    *,
    enabled: bool | None = None,
    traces: str | None = None,
    logs: str | None = None,
    protocol: str | None = None,
    endpoint: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> ExportChoice:
    """The exporters to build: the keyword arguments (from the config) override the variables.

    ``enabled`` None follows the variables (on when one of ``TURNS_EXPORT_ON`` is set, unless
    ``OTEL_SDK_DISABLED=true``); True exports with the variables' choices or their defaults (OTLP over
    http/protobuf); False exports nothing.
    """
    if enabled is None:
        enabled = environ.get("OTEL_SDK_DISABLED", "").strip().lower() != "true" and any(
            name in environ for name in TURNS_EXPORT_ON
        )
    if not enabled:
        return ExportChoice((), (), "http/protobuf", "http/protobuf")
    shared = protocol or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")

    def signal_protocol(signal: str) -> OtlpProtocol:
        if protocol is not None:
            return _protocol(protocol, "trustgate.telemetry.protocol")
        variable = f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL"
        return _protocol(
            environ.get(variable, shared), variable if variable in environ else "OTEL_EXPORTER_OTLP_PROTOCOL"
        )

    return ExportChoice(
        traces=_exporters(
            traces if traces is not None else environ.get("OTEL_TRACES_EXPORTER", "otlp"), "OTEL_TRACES_EXPORTER"
        ),
        logs=_exporters(logs if logs is not None else environ.get("OTEL_LOGS_EXPORTER", "otlp"), "OTEL_LOGS_EXPORTER"),
        traces_protocol=signal_protocol("TRACES"),
        logs_protocol=signal_protocol("LOGS"),
        endpoint=endpoint,
        headers=headers,
    )


def _otlp_arguments(choice: ExportChoice, protocol: OtlpProtocol, path: str) -> dict[str, Any]:
    """The config's endpoint and headers, as each exporter takes them (OTLP/HTTP wants the signal's URL)."""
    arguments: dict[str, Any] = {}
    if choice.endpoint is not None:
        base = choice.endpoint.rstrip("/")
        arguments["endpoint"] = base if protocol == "grpc" else f"{base}/{path}"
    if choice.headers is not None:
        arguments["headers"] = dict(choice.headers)
    return arguments


@dataclass(frozen=True)
class _Signal:
    """Where one signal's exporters live (each imported only when chosen: gRPC is an extra) and its OTLP path."""

    console: str  # "module:Class"
    grpc: str
    http: str
    path: str


_SPANS = _Signal(
    console="opentelemetry.sdk.trace.export:ConsoleSpanExporter",
    grpc="opentelemetry.exporter.otlp.proto.grpc.trace_exporter:OTLPSpanExporter",
    http="opentelemetry.exporter.otlp.proto.http.trace_exporter:OTLPSpanExporter",
    path="v1/traces",
)
_LOGS = _Signal(
    console="opentelemetry.sdk._logs.export:ConsoleLogRecordExporter",
    grpc="opentelemetry.exporter.otlp.proto.grpc._log_exporter:OTLPLogExporter",
    http="opentelemetry.exporter.otlp.proto.http._log_exporter:OTLPLogExporter",
    path="v1/logs",
)


def _exporter_class(where: str) -> Any:
    module, name = where.split(":")
    return getattr(importlib.import_module(module), name)


def _signal_exporters(
    choice: ExportChoice, names: tuple[str, ...], protocol: OtlpProtocol, signal: _Signal
) -> list[Any]:
    exporters: list[Any] = []
    for name in names:
        if name == "console":
            exporters.append(_exporter_class(signal.console)())
        elif protocol == "grpc":
            try:
                grpc = _exporter_class(signal.grpc)
            except ImportError as exc:
                raise ExportConfigError(f"OTLP over grpc needs {GRPC_EXTRA}") from exc
            exporters.append(grpc(**_otlp_arguments(choice, "grpc", signal.path)))
        else:
            exporters.append(_exporter_class(signal.http)(**_otlp_arguments(choice, "http/protobuf", signal.path)))
    return exporters


def span_exporters(choice: ExportChoice) -> list[Any]:
    return _signal_exporters(choice, choice.traces, choice.traces_protocol, _SPANS)


def log_exporters(choice: ExportChoice) -> list[Any]:
    return _signal_exporters(choice, choice.logs, choice.logs_protocol, _LOGS)
