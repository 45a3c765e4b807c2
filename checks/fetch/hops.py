"""One fetch as a chain of hops: the first request, and each redirect
re-validated and stripped of what the next origin must not see. Pure: no
network, so every rule here is decided before a connection is made."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import httpx
from django.conf import settings

from checks.errors import ErrorKind
from checks.fetch.body import ACCEPT_ENCODING
from checks.fetch.errors import FetchError
from monitors.url_rule import checked_url, url_syntax_error

DEFAULT_USER_AGENT = "Pagewatch/0.1 (+https://github.com/pagewatch)"
CONNECT_TIMEOUT_SECONDS = 10.0
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# A <meta> refresh loads its target with a bodiless GET, as a 303 does.
REFRESH_STATUS = 303
_TRANSPORT_HEADERS = (
    "host",
    "connection",
    "content-length",
    "transfer-encoding",
    "keep-alive",
    "proxy-authorization",
    "te",
    "upgrade",
)
_BODY_HEADERS = (
    "content-type",
    "content-length",
    "content-encoding",
    "transfer-encoding",
)


@dataclass(frozen=True)
class Options:
    budget: float  # seconds for the whole call, redirects included
    max_bytes: int
    follow_redirects: bool
    max_redirects: int
    # Keep the first max_bytes of a longer body instead of failing (robots.txt).
    truncate: bool = False
    # Follow a page that is only a <meta> refresh as a redirect (page fetches).
    follow_refresh: bool = False
    # Stop reading a file that is not a page at its first bytes (page fetches).
    pages_only: bool = False

    @classmethod
    def build(
        cls,
        timeout: float | None,
        max_bytes: int | None,
        follow_redirects: bool,
        max_redirects: int,
        truncate: bool = False,
        follow_refresh: bool = False,
        pages_only: bool = False,
    ) -> Options:
        # Settings are read per call, never at import: tests flip them with
        # pytest-django's `settings` fixture.
        if timeout is None:
            timeout = float(getattr(settings, "FETCH_TIMEOUT_SECONDS", 30))
        if max_bytes is None:
            max_bytes = int(getattr(settings, "FETCH_MAX_BYTES", 10 * 1024 * 1024))
        return cls(
            timeout,
            max_bytes,
            follow_redirects,
            max_redirects,
            truncate,
            follow_refresh and follow_redirects,
            pages_only,
        )

    def httpx_timeout(self) -> httpx.Timeout:
        budget = max(self.budget, 0.001)
        return httpx.Timeout(budget, connect=min(CONNECT_TIMEOUT_SECONDS, budget))


@dataclass
class Hop:
    method: str
    url: httpx.URL
    headers: httpx.Headers
    content: bytes | None


def first_hop(
    url: str, method: str, headers: Mapping[str, str] | None, content: bytes | None
) -> Hop:
    parsed, error = checked_url(url)
    if parsed is None:
        raise FetchError(ErrorKind.INVALID_URL, detail=error or "URL is not valid.")
    hop_headers = httpx.Headers(headers or {})
    for name in _TRANSPORT_HEADERS:
        # These describe the connection, which is ours to manage: a caller's
        # Host or Content-Length could only confuse or smuggle.
        hop_headers.pop(name, None)
    user_agent = getattr(settings, "OUTBOUND_USER_AGENT", DEFAULT_USER_AGENT)
    hop_headers.setdefault("User-Agent", str(user_agent))
    hop_headers["Accept-Encoding"] = ACCEPT_ENCODING
    return Hop(method.upper(), parsed, hop_headers, content)


def wants_redirect(status: int, headers: httpx.Headers, options: Options) -> bool:
    return (
        options.follow_redirects
        and status in _REDIRECT_STATUSES
        and "location" in headers
    )


def next_hop(hop: Hop, status: int, location: str, done: int, options: Options) -> Hop:
    """The hop a redirect (`status`, `location`) leads to, after `done` of them."""
    if done >= options.max_redirects:
        raise FetchError(
            ErrorKind.TOO_MANY_REDIRECTS, detail=str(options.max_redirects)
        )
    target = _redirect_target(hop.url, location)
    method, content, hop_headers = hop.method, hop.content, hop.headers.copy()
    # What browsers do: 303 always, and 301/302 after a POST, become a bodiless GET.
    if (status == 303 and method != "HEAD") or (
        status in (301, 302) and method == "POST"
    ):
        method, content = "GET", None
        for name in _BODY_HEADERS:
            hop_headers.pop(name, None)
    if not _may_keep_headers(hop.url, target):
        # Caller headers (Authorization, Cookie, API keys...) were meant for the
        # first origin only. The User-Agent is not a secret and stays.
        kept = {
            "User-Agent": hop_headers["user-agent"],
            "Accept-Encoding": ACCEPT_ENCODING,
        }
        if content is not None and "content-type" in hop_headers:
            kept["Content-Type"] = hop_headers["content-type"]  # 307/308 keep the body
        hop_headers = httpx.Headers(kept)
    return Hop(method, target, hop_headers, content)


def _redirect_target(current: httpx.URL, location: str) -> httpx.URL:
    if "\\" in location:
        detail = "Redirect location contains a backslash"
        raise FetchError(ErrorKind.INVALID_URL, detail=detail)
    try:
        target = current.join(location)
    except httpx.InvalidURL:
        detail = "Redirect location is not a valid URL"
        raise FetchError(ErrorKind.INVALID_URL, detail=detail) from None
    error = url_syntax_error(str(target))
    if error is not None:
        detail = f"Redirect to {str(target)[:200]} refused: {error}"
        raise FetchError(ErrorKind.INVALID_URL, detail=detail)
    return target


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80)


def _may_keep_headers(current: httpx.URL, target: httpx.URL) -> bool:
    if _origin(current) == _origin(target):
        return True
    # http://host -> https://host on default ports is an upgrade, not a new
    # party: nothing is sent that the first hop did not already expose.
    return _origin(current) == ("http", target.host, 80) and _origin(target) == (
        "https",
        target.host,
        443,
    )
