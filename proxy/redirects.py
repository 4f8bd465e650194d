"""Whether an upstream's redirect may be followed: by default never; at most to the same origin.

A redirect re-sends the request — the prompt, and for some providers the key
in a header no HTTP client knows to drop (Azure's ``api-key``, Anthropic's
``x-api-key``) — to wherever the upstream points. The configured ``api_base``
is the only place the operator chose to send those, so a redirect is refused
(``trustgate.upstream.follow_redirects: false``, the default) or followed only
when it stays on the origin (scheme, host and port) of the request it answers:
the request, credentials included, then never leaves the origin the
operator configured. Both upstream paths ask this one function.
"""

from __future__ import annotations

import httpx

__all__ = ["MAX_REDIRECTS", "RedirectRefused", "check_redirect"]

MAX_REDIRECTS = 5  # same-origin hops followed at most, when following is allowed


class RedirectRefused(httpx.TransportError):
    """An upstream answered with a redirect the gateway does not follow; nothing was sent to its target."""


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    default_port = {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host, url.port or default_port


def check_redirect(request: httpx.Request, response: httpx.Response, *, follow: bool) -> None:
    """Nothing when ``response`` is not a redirect, or one that may be followed; else ``RedirectRefused``."""
    if not response.has_redirect_location:
        return
    if not follow:
        raise RedirectRefused(f"upstream redirect ({response.status_code}) not followed")
    target = request.url.join(response.headers["location"])
    if _origin(target) != _origin(request.url):
        raise RedirectRefused(f"upstream redirect ({response.status_code}) to another origin not followed")
