"""What kind of failure a page error is, as data rather than wording.

A page result stores its kind next to its message (PageResult.error_kind), so
the dashboard, notifications and later retries can tell a time-out from a
refused address without reading English. Plain Python: no Django, no network.
"""

from __future__ import annotations

from enum import StrEnum


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
    UNREADABLE = "unreadable"  # nothing to extract: binary, empty, broken
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
    }
)


def kind_of_status(status_code: int | None) -> ErrorKind | None:
    """The kind of an HTTP error status, None for anything below 400."""
    if status_code is None or status_code < 400:
        return None
    return ErrorKind.HTTP_5XX if status_code >= 500 else ErrorKind.HTTP_4XX
