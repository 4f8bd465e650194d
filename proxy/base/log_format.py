"""One log stream for the whole process: one line per event, as text or as JSON, with the request id.

Every logger writes through the root logger's one handler. uvicorn's loggers
get there because the CLI passes uvicorn no logging config of its own; litellm's
because ``route_litellm_logs_to_root`` takes off the handler litellm adds at
import (it coloured each line with ANSI codes and, as its loggers also
propagate, printed each Router line a second time). litellm writes two INFO
lines for every upstream call (``completion() model=...``, then the Router's
``200 OK`` or the exception), which the gateway's own lines already tell (the
access line, the upstream failure): they are read as the gateway's DEBUG, so the
litellm path logs one line per event as the pass-through path does. Text lines carry no colour,
so a file or a collector reads them as written. JSON lines are one object per
event (a traceback is a field, not more lines), for collectors that parse logs
(Loki, Cloud Logging, Elasticsearch); both carry the request id of the request
being served (``proxy.base.request_ids``).
"""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import Literal, TextIO

from scoring.request_context import NO_REQUEST, current_request_id

__all__ = [
    "LOG_FORMATS",
    "LogFormat",
    "configure_logging",
    "configured_log_format",
    "line_formatter",
    "route_litellm_logs_to_root",
]

LogFormat = Literal["text", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Where litellm attaches its own handler (litellm/_logging.py).
LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")
# Colour codes, which some libraries put in the message itself (litellm's Router: "\x1b[32m 200 OK\x1b[0m").
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _one_line(text: str) -> str:
    """``text`` without its line breaks, which would split one event over lines a collector reads as many."""
    return " ".join(text.strip().splitlines())


class _TextFormatter(logging.Formatter):
    """The plain format, with ``request_id=...`` appended to the lines written while serving a request;
    colour codes only where a person reads the stream on a terminal."""

    def __init__(self, keep_colour: bool) -> None:
        super().__init__(TEXT_FORMAT)
        self._keep_colour = keep_colour

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = _one_line(record.message if self._keep_colour else _ANSI.sub("", record.message))
        return super().formatMessage(record)

    def format(self, record: logging.LogRecord) -> str:
        line = _one_line(super().format(record))  # the message's and a traceback's line breaks included
        request_id = current_request_id.get()
        return line if request_id == NO_REQUEST else f"{line} request_id={request_id}"


class _JsonFormatter(logging.Formatter):
    """One JSON object per line: time (UTC, ISO 8601), level, logger, message, request_id, exception."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, str] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": _ANSI.sub("", record.getMessage()).strip(),
        }
        request_id = current_request_id.get()
        if request_id != NO_REQUEST:
            entry["request_id"] = request_id
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def line_formatter(log_format: LogFormat, *, keep_colour: bool = False) -> logging.Formatter:
    """The formatter of one log line in ``log_format``, the request id included (``keep_colour``: text for a
    terminal)."""
    return _JsonFormatter() if log_format == "json" else _TextFormatter(keep_colour=keep_colour)


def configure_logging(log_format: LogFormat, level: int = logging.INFO, stream: TextIO | None = None) -> None:
    """The root logger's one handler (called once, by the CLI, before anything logs). Like
    ``logging.basicConfig``, it leaves a root logger that already has handlers alone: a host that runs the
    CLI in its own process (a test runner capturing logs) keeps its own."""
    root = logging.getLogger()
    if root.handlers:
        return
    stream = stream or sys.stderr
    handler = logging.StreamHandler(stream)
    handler.setFormatter(line_formatter(log_format, keep_colour=stream.isatty()))
    root.addHandler(handler)
    root.setLevel(level)
    # A library's warning is an event like any other: one line in this format (the py.warnings logger), not
    # the three lines Python writes on stderr (message, source line, code).
    logging.captureWarnings(True)


def configured_log_format() -> LogFormat:
    """The format of the root handler ``configure_logging`` set (text when it set none): a child process
    started by the gateway (its local scoring worker) logs alike."""
    json_lines = any(isinstance(h.formatter, _JsonFormatter) for h in logging.getLogger().handlers)
    return "json" if json_lines else "text"


class _InfoAsDebug(logging.Filter):
    """A library's INFO lines at DEBUG: kept where the process logs DEBUG, dropped where it logs INFO."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO:
            return True
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return logging.getLogger().isEnabledFor(logging.DEBUG)


_INFO_AS_DEBUG = _InfoAsDebug()


def route_litellm_logs_to_root() -> None:
    """Take off litellm's own handlers (called right after importing litellm): its lines then reach the
    root handler once, in this process's format, its INFO lines as DEBUG. The handlers' filters (litellm's
    secret redaction) move onto the loggers, so they still apply."""
    for name in LITELLM_LOGGERS:
        logger = logging.getLogger(name)
        for handler in logger.handlers:
            for log_filter in handler.filters:
                if log_filter not in logger.filters:
                    logger.addFilter(log_filter)
        logger.handlers.clear()
        logger.propagate = True
        if _INFO_AS_DEBUG not in logger.filters:
            logger.addFilter(_INFO_AS_DEBUG)
