"""FetchError, the one table of what each kind of fetch failure says, and the
translation of httpx's exceptions into it."""

from __future__ import annotations

import ssl

import httpx

from checks.errors import ErrorKind

# The message an API client reads in a page's `error`, by kind: the only place
# fetch errors are worded. {host} is the host asked for, {detail} what
# differs between two failures of one kind (a size, an address, a reason).
MESSAGES: dict[ErrorKind, str] = {
    ErrorKind.DNS: "Could not resolve {host}",
    ErrorKind.REFUSED: "Connection refused by {host}",
    ErrorKind.CONNECT: "Could not connect to {host}",
    ErrorKind.TIMEOUT: "Gave up on {host} after {detail}",
    ErrorKind.TLS: "TLS handshake with {host} failed ({detail})",
    ErrorKind.BLOCKED_ADDRESS: "Blocked: {detail}",
    # The URL rule's own sentence (monitors.url_rule), or the redirect's.
    ErrorKind.INVALID_URL: "{detail}",
    ErrorKind.TOO_LARGE: "Page is larger than {detail}",
    ErrorKind.TOO_MANY_REDIRECTS: "Stopped after {detail} redirects",
    ErrorKind.PROTOCOL: "Server sent {detail}",
    # Worded by checks.browser: which browser, which action and why.
    ErrorKind.BROWSER: "{detail}",
    ErrorKind.ACTION: "{detail}",
    # An app the browser showed whose scripts never gave it content.
    ErrorKind.EMPTY: "{detail}",
}


class FetchError(Exception):
    """A fetch that did not produce a response; `message` is safe to show users."""

    def __init__(self, kind: ErrorKind, *, host: str = "", detail: str = "") -> None:
        message = MESSAGES[kind].format(host=host, detail=detail)
        super().__init__(message)
        self.kind = kind
        self.message = message
        # The answer's Content-Type and status, when there was an answer (a
        # body too large to read): a crawl tells a download from a page by
        # the type, and a page result says what the site answered.
        self.content_type = ""
        self.status_code: int | None = None

    def __repr__(self) -> str:
        return f"FetchError({self.kind.value!r}, {self.message!r})"


def human_size(n: int) -> str:
    mb = 1024 * 1024
    if n >= mb:
        return f"{n / mb:.3g} MB"
    if n >= 1024:
        return f"{n / 1024:.3g} KB"
    return f"{n} bytes"


_INCOMPLETE = "peer closed connection without sending complete message body"


def translate(exc: httpx.HTTPError, host: str, timeout: httpx.Timeout) -> FetchError:
    """An httpx exception as a FetchError whose message a user can act on.

    `timeout` is the one the request was sent with, so a time-out can say how
    long was waited."""
    if isinstance(exc, httpx.ConnectTimeout):
        waited = f"{timeout.connect:g} s while connecting"
        return FetchError(ErrorKind.TIMEOUT, host=host, detail=waited)
    if isinstance(exc, httpx.TimeoutException):
        return FetchError(ErrorKind.TIMEOUT, host=host, detail=f"{timeout.read:g} s")
    if _cause(exc, ssl.SSLError) is not None:
        return FetchError(ErrorKind.TLS, host=host, detail=_tls_reason(exc))
    if _cause(exc, ConnectionRefusedError) is not None:
        return FetchError(ErrorKind.REFUSED, host=host)
    if isinstance(exc, httpx.NetworkError):
        return FetchError(ErrorKind.CONNECT, host=host)
    if isinstance(exc, httpx.RemoteProtocolError) and _INCOMPLETE in str(exc):
        # h11's words for a body cut off (a dropped chunked stream, or fewer
        # bytes than Content-Length): the answer was valid, just not whole.
        detail = "an incomplete page (the connection closed before its end)"
        return FetchError(ErrorKind.PROTOCOL, detail=detail)
    if isinstance(exc, (httpx.InvalidURL, httpx.UnsupportedProtocol)):
        return FetchError(ErrorKind.INVALID_URL, detail=f"URL is not valid: {exc}")
    return FetchError(ErrorKind.PROTOCOL, detail="an invalid HTTP response")


def _tls_reason(exc: BaseException) -> str:
    verify_error = _cause(exc, ssl.SSLCertVerificationError)
    if verify_error is not None:
        detail = verify_error.verify_message or "rejected"
        return f"certificate not valid: {detail}"
    error = _cause(exc, ssl.SSLError)
    reason = getattr(error, "reason", None)
    return str(reason).lower().replace("_", " ") if reason else "no reason given"


def _cause[E: BaseException](exc: BaseException, kind: type[E]) -> E | None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
