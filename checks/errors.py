"""What kind of failure a page error is, as data rather than wording, and the
plain words people are shown for each kind.

A page result stores its kind next to its message (PageResult.error_kind), so
the dashboard, notifications and later retries can tell a time-out from a
refused address without reading English; the dashboard and the change e-mails
both say it with plain_error(). Plain Python: no Django, no network.
"""

from __future__ import annotations

import html
import json
import re
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime
from enum import StrEnum
from typing import Any


class ErrorKind(StrEnum):
    # A fetch that produced no response (checks.fetch.FetchError).
    DNS = "dns"
    REFUSED = "refused"
    CONNECT = "connect"
    TIMEOUT = "timeout"
    TLS = "tls"
    BLOCKED_ADDRESS = "blocked_address"
    INVALID_URL = "invalid_url"
    TOO_LARGE = "too_large"
    TOO_MANY_REDIRECTS = "too_many_redirects"
    PROTOCOL = "protocol"
    # The browser (checks.browser): not available, crashed or could not show
    # the page; or one of the page's actions failed.
    BROWSER = "browser"
    ACTION = "action"
    # A page that answered, or was never fetched, and still has no result.
    HTTP_4XX = "http_4xx"
    HTTP_5XX = "http_5xx"
    # The site's bot protection answered with a challenge page (a captcha,
    # "Just a moment…") in place of the page: blocked by the site.
    CHALLENGE = "challenge"
    UNREADABLE = "unreadable"  # nothing to extract: binary, broken
    # A PDF's scanned pages OCR had no time for at this check (the check's
    # time ran out, or the worker's other PDFs took it): its last content is
    # kept and it is read again at the next check.
    OCR_OUT_OF_TIME = "ocr_out_of_time"
    # The site's "not found" page answered with HTTP 200 (a "soft 404"),
    # confirmed by a made-up address of the site answering the same page
    # (checks.pipeline.not_found): the page is gone, as a 404 would say.
    NOT_FOUND_PAGE = "not_found_page"
    # A page that had content answered with nothing (an empty 200, a 204):
    # its last content is kept, so a blank moment is no change.
    EMPTY = "empty"
    NOT_CACHED = "not_cached"  # minAge asked for a copy at least that old
    # The model's part (checks.ai): JSON extraction gave no object, or there
    # is no model to ask.
    EXTRACTION = "extraction"
    NO_MODEL = "no_model"
    # Search targets (checks.search): the provider gave no answer, or the
    # judge could not give a result a verdict.
    SEARCH_FAILED = "search_failed"
    NOT_JUDGED = "not_judged"
    INTERNAL = "internal"

    @classmethod
    def choices(cls) -> list[tuple[str, str]]:
        """(value, label) pairs for a model field's `choices`."""
        return [(kind.value, kind.value.replace("_", " ")) for kind in cls]


FETCH_KINDS = frozenset(
    {
        ErrorKind.DNS,
        ErrorKind.REFUSED,
        ErrorKind.CONNECT,
        ErrorKind.TIMEOUT,
        ErrorKind.TLS,
        ErrorKind.BLOCKED_ADDRESS,
        ErrorKind.INVALID_URL,
        ErrorKind.TOO_LARGE,
        ErrorKind.TOO_MANY_REDIRECTS,
        ErrorKind.PROTOCOL,
        ErrorKind.BROWSER,
        ErrorKind.ACTION,
        ErrorKind.EMPTY,  # an app the browser showed left empty by its scripts
    }
)


# Text written for programs rather than people: markup (an error page's HTML),
# key=value pairs (a provider's "scrapeId=…"), a traceback or JSON, or an
# exception's text ("httpx.ConnectError: [Errno 111] …", "ReadTimeout: …").
_RAW = re.compile(
    r"<[A-Za-z!/][^<>]*>|\b[A-Za-z_][\w.-]*=\S|Traceback \(|\{\""
    r"|\[Errno -?\d+\]"
    r"|\b[a-z_]\w*(?:\.\w+)*\.[A-Z]\w*(?:Error|Exception)\b"
    r"|^[A-Z][a-z]+(?:[A-Z][a-z]*)*(?:Error|Exception|Timeout)\b"
)


def is_raw(text: str | None) -> bool:
    """Whether `text` is internal text no reader should be sent as it is."""
    return bool(text and _RAW.search(text))


def kind_of_status(status_code: int | None) -> ErrorKind | None:
    """The kind of an HTTP error status, None for anything below 400."""
    if status_code is None or status_code < 400:
        return None
    return ErrorKind.HTTP_5XX if status_code >= 500 else ErrorKind.HTTP_4XX


# The longest wait a Retry-After is taken at: the header is the site's (or a
# webhook receiver's) to choose, and a larger number overflows timedelta, or
# `now + wait` later on.
RETRY_AFTER_LONGEST = timedelta(days=365)
# delay-seconds is ASCII digits (RFC 9110): str.isdigit() would take "²",
# which int() then refuses.
_SECONDS = re.compile(r"[0-9]+")


def parse_retry_after(value: str | None, now: datetime) -> timedelta | None:
    """Retry-After as seconds or an HTTP date, at most RETRY_AFTER_LONGEST;
    None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if _SECONDS.fullmatch(value):
        longest = int(RETRY_AFTER_LONGEST.total_seconds())
        # int() of thousands of digits is refused (and slow): judge by length.
        seconds = int(value) if len(value) <= len(str(longest)) else longest
        return timedelta(seconds=min(seconds, longest))
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        return None
    return min(max(moment - now, timedelta(0)), RETRY_AFTER_LONGEST)


# A service's words about an error are shown (escaped) up to this length.
SERVICE_WORDS_MAX = 300
_TAGS = re.compile(r"<[^>]{0,200}>")


def service_words(content: bytes | str) -> str:
    """A service's own words about an error it answered (the AI model's
    endpoint, a search provider), when it sent them as JSON: `{"error":
    {"message": …}}` as OpenAI and most APIs do, `{"error": "…"}`,
    `{"detail": "…"}` as FastAPI-based servers do, or `{"message": "…"}`.
    Plain text without its last full stop, so the caller's sentence goes on;
    "" when it sent none."""
    try:
        body = json.loads(content)
    except (ValueError, RecursionError):  # nested past what the parser reads
        return ""
    if not isinstance(body, dict):
        return ""
    for key in ("error", "detail", "message"):
        value = body.get(key)
        if isinstance(value, dict):
            value = value.get("message") or value.get("error")
        if isinstance(value, str) and value.strip():
            return plain(value, SERVICE_WORDS_MAX).rstrip(".")
    return ""


def plain(text: Any, limit: int = 1000) -> str:
    """Text from a service (its words about an error, a search result's
    title) as plain text: tags dropped, entities read, whitespace folded, no
    control characters, bounded; "" for anything but a string. Templates
    escape it again."""
    if not isinstance(text, str):
        return ""
    words = " ".join(html.unescape(_TAGS.sub("", text)).split())
    words = "".join(ch for ch in words if ch.isprintable())
    return words if len(words) <= limit else words[: limit - 1].rstrip() + "…"


# Statuses whose Retry-After says when the site will answer again (RFC 9110).
_ASKS_TO_WAIT = frozenset({429, 503})
# The stored message's wording of that wait, read back by plain_error.
_WAITED = re.compile(r" and asked us to wait ([^.]+)\.")
_UNITS = (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))


def wait_words(wait: timedelta) -> str:
    """A wait in words: the largest unit it holds, rounded ("2 minutes")."""
    seconds = max(int(wait.total_seconds()), 1)
    for unit, size in _UNITS:
        # The largest unit it holds, rounded: 100 seconds read "2 minutes".
        if seconds >= size:
            count = round(seconds / size)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    raise AssertionError("unreachable")  # pragma: no cover


def asked_wait(code: int, retry_after: str | None, now: datetime) -> timedelta | None:
    """How long an answer with this status asked us to wait: its Retry-After,
    read only on a 429 or 503; None when it did not ask."""
    return parse_retry_after(retry_after, now) if code in _ASKS_TO_WAIT else None


def http_error_text(code: int, retry_after: str | None, now: datetime) -> str:
    """The stored message of an HTTP error answer, with how long the site
    asked us to wait when it said (Retry-After on a 429 or 503)."""
    wait = asked_wait(code, retry_after, now)
    if wait is None:
        return f"The page answered HTTP {code}."
    return f"The page answered HTTP {code} and asked us to wait {wait_words(wait)}."


# What each kind of page error means, for readers who do not speak HTTP.
_PLAIN_WORDS: dict[ErrorKind, str] = {
    ErrorKind.DNS: "The site's address could not be found.",
    ErrorKind.REFUSED: "The site refused the connection.",
    ErrorKind.CONNECT: "The connection to the site failed.",
    ErrorKind.TIMEOUT: "The page took too long to answer.",
    ErrorKind.TLS: "A secure (HTTPS) connection to the site could not be set up.",
    ErrorKind.BLOCKED_ADDRESS: (
        "The address belongs to a private network or to the cloud provider's"
        " internal services, which are never checked."
    ),
    ErrorKind.INVALID_URL: "The address (or one it redirected to) is not valid.",
    ErrorKind.TOO_LARGE: "The page is too large to check.",
    ErrorKind.TOO_MANY_REDIRECTS: "The page kept redirecting to other addresses.",
    ErrorKind.PROTOCOL: "The site sent an answer that could not be read.",
    ErrorKind.BROWSER: "The browser could not show this page.",
    ErrorKind.ACTION: "One of the steps to perform on the page failed.",
    ErrorKind.HTTP_4XX: "The site turned the request down (HTTP {code}).",
    ErrorKind.HTTP_5XX: "The site had an internal problem (HTTP {code}).",
    ErrorKind.CHALLENGE: (
        "The site blocked the check: its bot protection showed a challenge"
        " page (“checking your browser”, a captcha) instead of the page."
    ),
    ErrorKind.UNREADABLE: "The page's content could not be turned into text.",
    ErrorKind.OCR_OUT_OF_TIME: (
        "This check ran out of time before it could read the scanned pages of"
        " this PDF. They are read again at the next check; until then the"
        " page's last content is kept."
    ),
    ErrorKind.NOT_FOUND_PAGE: (
        "The page shows the site's “not found” page, although the server"
        " answered HTTP {code} as if the page were there."
    ),
    ErrorKind.EMPTY: (
        "The page answered with nothing in it this time; the last content is kept."
    ),
    ErrorKind.NOT_CACHED: (
        "No saved copy was old enough to use, so the page was not fetched."
    ),
    ErrorKind.EXTRACTION: (
        "The AI model could not read the fields this monitor asks for from the page."
    ),
    ErrorKind.NO_MODEL: (
        "This monitor asks an AI model to read fields from the page, and no AI"
        " model is set up for this Pagewatch yet (an administrator can set one up)."
    ),
    ErrorKind.SEARCH_FAILED: (
        "The web search could not be run, so new results may be missing."
    ),
    ErrorKind.NOT_JUDGED: (
        "The AI model could not judge this result against the goal; it is judged"
        " again when the search finds it next time."
    ),
    ErrorKind.INTERNAL: "Something went wrong on our side while checking this page.",
}
_PLAIN_WORDS_BY_CODE = {
    401: "The page asks for a login (HTTP 401).",
    403: "The site refused access (HTTP 403).",
    404: "The page was not found (HTTP 404).",
    410: "The page is gone (HTTP 410).",
    429: "The site said we asked too often (HTTP 429).",
}
# Kinds whose stored message only repeats the words (or names API options):
# the others keep it in brackets, as the exact reason.
_SAID_IN_FULL = frozenset(
    {
        ErrorKind.HTTP_4XX,
        ErrorKind.HTTP_5XX,
        ErrorKind.CHALLENGE,
        ErrorKind.NOT_FOUND_PAGE,
        ErrorKind.EMPTY,
        ErrorKind.NOT_CACHED,
        ErrorKind.NO_MODEL,
        ErrorKind.INTERNAL,
    }
)


UNKNOWN_WORDS = "Something went wrong while checking this page."


def plain_error(kind: str, status_code: int | None, text: str | None) -> str:
    """A page error in words a non-technical reader understands, chosen by its
    kind, with the stored text in brackets as the exact reason: the
    dashboard's way (see error_words for messages). A row without a kind
    (written before kinds were stored) goes by its HTTP status, else shows
    its stored text as it is."""
    detail = (text or "").strip()
    known = _kind_of(kind, status_code)
    if known is None:
        return detail or UNKNOWN_WORDS
    words = error_words(kind, status_code, text)
    if known in _SAID_IN_FULL or not detail:
        return words
    return f"{words} ({detail})"


def error_words(kind: str, status_code: int | None, text: str | None) -> str:
    """A page error in its kind's words only, as messages to people say it
    (e-mails, chat, alerts): the stored text is written for programs
    ("httpx.ConnectError: [Errno 111] …") and stays in the API's `error`
    and the dashboard. A row without a kind goes by its HTTP status, else
    says its stored text unless that is raw."""
    text = (text or "").strip()
    known = _kind_of(kind, status_code)
    if known is None:
        return text if text and not is_raw(text) else UNKNOWN_WORDS
    if known in (ErrorKind.HTTP_4XX, ErrorKind.HTTP_5XX):
        return _http_words(known, status_code, text)
    return _PLAIN_WORDS[known].format(code=status_code)


def _kind_of(kind: str, status_code: int | None) -> ErrorKind | None:
    try:
        return ErrorKind(kind) if kind else kind_of_status(status_code)
    except ValueError:
        return None


def _http_words(kind: ErrorKind, status_code: int | None, text: str) -> str:
    words = (
        _PLAIN_WORDS_BY_CODE.get(status_code or 0)
        if kind == ErrorKind.HTTP_4XX
        else None
    )
    words = words or _PLAIN_WORDS[kind].format(code=status_code)
    waited = _WAITED.search(text)
    if waited:
        words += f" It asked us to wait {waited.group(1)} before asking again."
    return words
