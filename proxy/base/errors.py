"""The gateway's exception tree, rendered once in the OpenAI error shape.

    GatewayError
    ├── RequestRejected
    │   ├── InvalidRequest          400 invalid_request_error
    │   ├── BudgetExceeded          400 budget_exceeded (a key's max_budget spent, as LiteLLM's proxy says it)
    │   ├── AuthenticationFailed    401 authentication_error
    │   ├── PermissionDenied        403 permission_error
    │   ├── NotFound                404 not_found_error
    │   │   └── ModelNotFound
    │   └── RateLimited             429 rate_limit_error (a key's or deployment's limit, with Retry-After)
    ├── ServiceUnavailable          503 a part of the gateway (the record store) is down for now
    ├── ClientDisconnected          499 (nobody reads it: for logs and metrics)
    └── UpstreamError               the upstream's own status, passed on
        ├── UpstreamAuthFailed      401
        ├── UpstreamRateLimited     429
        ├── UpstreamUnavailable     502 (connection refused or reset)
        └── UpstreamTimeout         504

Every error knows its HTTP status and OpenAI ``type`` so that a single handler
renders them; upstream and library errors are translated into this tree in one
place (``proxy.upstream.errors``) so clients never see a provider's raw exception.
"""

from __future__ import annotations

import math
from typing import Any, Literal

__all__ = [
    "AuthenticationFailed",
    "BudgetExceeded",
    "ClientDisconnected",
    "GatewayError",
    "InvalidRequest",
    "ModelNotFound",
    "NotFound",
    "PermissionDenied",
    "RateLimited",
    "Refusal",
    "RequestRejected",
    "ServiceUnavailable",
    "UpstreamAuthFailed",
    "UpstreamError",
    "UpstreamRateLimited",
    "UpstreamTimeout",
    "UpstreamUnavailable",
    "error_body",
]


class GatewayError(Exception):
    status_code: int = 500
    error_type: str = "api_error"

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        status_code: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code
        self.retry_after = retry_after  # seconds; sent back as ``Retry-After`` (a 429's, an upstream's)
        if status_code is not None:
            self.status_code = status_code

    def headers(self) -> dict[str, str]:
        if self.retry_after is None:
            return {}
        return {"retry-after": str(max(1, math.ceil(self.retry_after)))}

    def body(self) -> dict[str, Any]:
        return error_body(self.message, self.error_type, param=self.param, code=self.code)


class RequestRejected(GatewayError):
    status_code = 400
    error_type = "invalid_request_error"


class InvalidRequest(RequestRejected):
    pass


class BudgetExceeded(RequestRejected):
    """The key has spent its ``max_budget`` in this budget window: 400 and ``budget_exceeded``, as LiteLLM's proxy
    answers, so that clients written for it read the refusal alike."""

    error_type = "budget_exceeded"

    def __init__(self, message: str) -> None:
        super().__init__(message, code="budget_exceeded")


class AuthenticationFailed(RequestRejected):
    status_code = 401
    error_type = "authentication_error"


class PermissionDenied(RequestRejected):
    status_code = 403
    error_type = "permission_error"


class NotFound(RequestRejected):
    status_code = 404
    error_type = "not_found_error"


class ModelNotFound(NotFound):
    pass


class ServiceUnavailable(GatewayError):
    status_code = 503
    error_type = "api_error"


class ClientDisconnected(GatewayError):
    """The client left before its answer was ready; its upstream call was cancelled."""

    status_code = 499
    error_type = "client_closed_request"


class RateLimited(RequestRejected):
    status_code = 429
    error_type = "rate_limit_error"


# A refusal another model may not share, as the provider's own text says (read by the translator, never sent).
Refusal = Literal["context_window", "content_policy"]


class UpstreamError(GatewayError):
    """The upstream answered with an error, or did not answer at all."""

    status_code = 502
    error_type = "api_error"
    refusal: Refusal | None = None  # set by the translator, which alone sees the provider's text

    @property
    def retryable(self) -> bool:
        """Worth another try on the same model group (LiteLLM's rule: 408, 429, 5xx)."""
        return self.status_code in (408, 429) or self.status_code >= 500

    @property
    def client_fault(self) -> bool:
        """The request itself was refused: no fallback model would accept it either."""
        return self.status_code in (400, 404, 413, 422)


class UpstreamAuthFailed(UpstreamError):
    status_code = 401
    error_type = "authentication_error"


class UpstreamRateLimited(UpstreamError):
    status_code = 429
    error_type = "rate_limit_error"


class UpstreamUnavailable(UpstreamError):
    """The upstream could not be reached at all (refused, reset, DNS)."""

    status_code = 502
    error_type = "api_error"


class UpstreamTimeout(UpstreamError):
    status_code = 504
    error_type = "timeout_error"


def error_body(message: str, error_type: str, *, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}
