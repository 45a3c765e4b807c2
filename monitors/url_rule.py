"""The one URL rule: which URLs Pagewatch may fetch or post to at all.

Shared by the API serializers, the dashboard forms and every fetch hop
(checks.fetch), so they can never disagree. Syntax only: which *addresses*
may be reached needs DNS and is judged when connecting (checks.fetch.policy).
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import urlsplit

import httpx

MAX_URL_LENGTH = 2048

_HOST_NAME = re.compile(r"[a-z0-9._-]+")
_PORT_START = re.compile(r"\d{1,5}(?:[/?#]|$)")


def url_syntax_error(url: str) -> str | None:
    """The one URL rule shared by the API, the forms and every fetch hop.

    Returns a message fit to show a user, or None. Addresses are not judged here
    (that needs DNS); they are judged at connect time.
    """
    return checked_url(url)[1]


def checked_url(url: str) -> tuple[httpx.URL | None, str | None]:
    """(the parsed URL, None) when url_syntax_error() finds nothing, else
    (None, its message): a fetch hop needs the parsed URL anyway."""
    if not url:
        return None, "Enter a URL."
    if len(url) > MAX_URL_LENGTH:
        return None, f"URL is longer than {MAX_URL_LENGTH} characters."
    if _has_space_or_control(url):
        if " " in url.strip() and "://" not in url:
            # Words, not an address with a stray space in it.
            return None, (
                f"“{url.strip()[:60]}” is not a web address: it should look like "
                "https://example.com/page."
            )
        if url.strip().isprintable():  # only spaces: say how to mend them
            return None, (
                "URL must not contain spaces: remove them, or write a space in "
                "the path as %20."
            )
        return None, "URL must not contain spaces or control characters."
    if "\\" in url:
        # Browsers read "\" as "/", Python does not: refuse the ambiguity.
        return None, "URL must not contain backslashes."
    try:
        parts = urlsplit(url)
    except ValueError:
        return None, "URL is not valid."
    if _typed_without_scheme(url, parts.scheme):
        return None, _missing_scheme(url)
    if parts.scheme.lower() not in ("http", "https"):
        return None, "Only http:// and https:// URLs are allowed."
    if "@" in parts.netloc:
        return None, "URL must not contain a user name or password."
    if not parts.hostname:
        return None, "URL must include a host name."
    error = _port_error(url)
    if error is not None:
        return None, error
    return _parsed_host(url)


def _typed_without_scheme(url: str, scheme: str) -> bool:
    """An address typed without its start ("example.com/pricing"), rather
    than another kind of URL: no scheme and no leading slash (a path alone
    names no site), or a "scheme" that is a host followed by a port
    ("localhost:8000" parses as scheme "localhost"; "tel:12345" does not)."""
    if not scheme:
        return not url.startswith("/")
    looks_like_host = "." in scheme or scheme.lower() == "localhost"
    return looks_like_host and bool(_PORT_START.match(url[len(scheme) + 1 :]))


def _missing_scheme(url: str) -> str:
    example = f"https://{url}" if len(url) <= 60 else "https://example.com/"
    return f"Start the address with https:// or http://, e.g. {example}"


def _has_space_or_control(url: str) -> bool:
    if url.isascii():  # the usual URL: C-speed checks, no per-character loop
        return not url.isprintable() or " " in url
    # Cs: a lone surrogate (JSON's "\ud800" from a search provider, say),
    # which is no text and which no URL can encode.
    return any(
        ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf", "Cs") for ch in url
    )


def _port_error(url: str) -> str | None:
    try:
        port = urlsplit(url).port
    except ValueError:
        return "URL has an invalid port."
    if port is not None and not 1 <= port <= 65535:
        return "URL has an invalid port."
    return None


def _parsed_host(url: str) -> tuple[httpx.URL | None, str | None]:
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return None, "URL is not valid."
    host = parsed.raw_host.decode("ascii")
    if ":" in host:  # IPv6 literal, already validated by httpx; zone ids are not
        return (parsed, None) if "%" not in host else (None, "URL host is not valid.")
    if not _HOST_NAME.fullmatch(host):
        return None, "URL host contains characters that are not allowed."
    return parsed, None


def short_url(url: str | None, length: int = 60) -> str:
    """A URL without its scheme, shortened in the middle for tables. Only the
    web's schemes are left out: another (ftp://) is what makes it refused."""
    if not url:
        return ""
    scheme, sep, rest = url.partition("://")
    text = rest if sep and scheme.lower() in ("http", "https") else url
    if len(text) <= length:
        return text
    half = (length - 1) // 2
    return f"{text[:half]}…{text[-half:]}"
