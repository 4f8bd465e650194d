"""Whether an upstream's redirect may be followed: by default never; at most to the same origin.

A redirect re-sends the request — the prompt, and for some providers the key
in a header no HTTP client knows to drop (Azure's ``api-key``, Anthropic's
``x-api-key``) — to wherever the upstream points. The configured ``api_base``
is the only place the operator chose to send those, so a redirect is refused
(``trustgate.upstream.follow_redirects: false``, the default) or followed only
when it stays on the origin (scheme, host and port) of the request it answers,
and then without the credentials (``CREDENTIAL_HEADERS``): the request never
leaves the origin the operator configured, and the key goes only to the URL
the config names (one origin may serve others under other paths). Both
upstream paths (the pass-through client and litellm's httpx transport) ask
``redirect_target`` and drop the credentials with ``without_credentials``.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urljoin, urlsplit

import httpx

__all__ = [
    "CREDENTIAL_HEADERS",
    "MAX_REDIRECTS",
    "REDIRECT_STATUSES",
    "RedirectRefused",
    "check_redirect",
    "redirect_target",
    "without_credentials",
]

MAX_REDIRECTS = 5  # same-origin hops followed at most, when following is allowed
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# The headers providers take keys in (OpenAI's and most: authorization; Azure's api-key; Anthropic's x-api-key;
# Google's x-goog-api-key), and those a proxy or a session would: never sent on a followed redirect.
CREDENTIAL_HEADERS = frozenset(
    {"authorization", "api-key", "x-api-key", "x-goog-api-key", "proxy-authorization", "cookie"}
)


class RedirectRefused(httpx.TransportError):
    """An upstream answered with a redirect the gateway does not follow; nothing was sent to its target."""


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or {"http": 80, "https": 443}.get(scheme)


def redirect_target(url: str, status: int, location: str | None, *, follow: bool) -> str | None:
    """Where a reply to a request for ``url`` redirects to, when it may be followed; None when it is no redirect.

    A redirect that may not be followed (any, unless ``follow``; else one that
    leaves the origin) raises ``RedirectRefused``.
    """
    if status not in REDIRECT_STATUSES or location is None:
        return None
    if not follow:
        raise RedirectRefused(f"upstream redirect ({status}) not followed")
    target = urljoin(url, location)
    if _origin(target) != _origin(url):
        raise RedirectRefused(f"upstream redirect ({status}) to another origin not followed")
    return target


def check_redirect(request: httpx.Request, response: httpx.Response, *, follow: bool) -> str | None:
    """``redirect_target`` for httpx's request and response (litellm's transport): refused, or where it leads."""
    return redirect_target(str(request.url), response.status_code, response.headers.get("location"), follow=follow)


def without_credentials(headers: Mapping[str, str]) -> dict[str, str]:
    """``headers`` less those that carry a key (``CREDENTIAL_HEADERS``): what a followed redirect sends."""
    return {name: value for name, value in headers.items() if name.lower() not in CREDENTIAL_HEADERS}
