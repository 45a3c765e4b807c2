"""One result, one key: the canonical form of a search result's URL, and the
domain rules (includeDomains / excludeDomains) applied to it.

Firecrawl's rules fold the scheme (http and https are one page), a leading
``www.``, one trailing slash and letter case; tracking parameters (``utm_*``,
click ids and the like) are dropped and the rest of the query is sorted, so
a link shared from a newsletter is the result already seen. A host or path
written in letters (``bücher.example/ärger``) is one with its ASCII form
(``xn--bcher-kva.example/%C3%A4rger``), as search engines give either. Plain
Python.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import idna

from monitors.rules import ascii_domain

# Query parameters that say where a click came from, never which page it is.
TRACKING_PREFIXES = ("utm_", "mtm_", "pk_", "oly_", "vero_", "_hs")
TRACKING_PARAMETERS = frozenset(
    {
        "fbclid", "gclid", "gclsrc", "dclid", "gbraid", "wbraid", "msclkid",
        "yclid", "twclid", "ttclid", "li_fat_id", "igshid", "mc_cid", "mc_eid",
        "mkt_tok", "_ga", "_gl", "ref_src", "ref_url", "spm", "s_cid",
        "cmpid", "ncid", "sr_share",
    }
)  # fmt: skip
_DEFAULT_PORTS = {"http": 80, "https": 443}
# What a path keeps as it is: only letters beyond ASCII are escaped.
_PATH_SAFE = "/%:@!$&'()*+,;=-._~"


def is_tracking(name: str) -> bool:
    lowered = name.lower()
    return lowered in TRACKING_PARAMETERS or lowered.startswith(TRACKING_PREFIXES)


def host_of(url: str) -> str:
    """The URL's host, lower case, without a leading ``www.``."""
    host = _ascii_host((urlsplit(url).hostname or "").lower().rstrip("."))
    return host[4:] if host.startswith("www.") else host


def _ascii_host(host: str) -> str:
    """`ascii_domain`, and for a name IDNA 2008 refuses (a symbol: ☃.net) the
    ASCII name browsers go to (xn--n3h.net), so that both spellings are one
    result. Such a name is still no domain rule (rules.domain_error refuses
    it), but a search engine may well give it. The same UTS 46 mapping as
    ascii_domain (ß stays ß) without IDNA 2008's check of each letter, as the
    WHATWG URL standard does; IDNA 2003 would read faß☃ as another site,
    fass☃. A name even that cannot map stays as given: a key of its own."""
    ascii_host = ascii_domain(host)
    if ascii_host.isascii():
        return ascii_host
    try:
        mapped = idna.uts46_remap(host, std3_rules=False, transitional=False)
        return ".".join(
            label if label.isascii() else "xn--" + label.encode("punycode").decode()
            for label in mapped.split(".")
        )
    except UnicodeError:  # idna.IDNAError and InvalidCodepoint are ones
        return host


def canonical_url(url: str) -> str:
    """The form two URLs of one result share (see the module's docstring)."""
    parts = urlsplit(url.strip())
    host = host_of(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    scheme = parts.scheme.lower()
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        host = f"{host}:{port}"
    path = quote(parts.path, safe=_PATH_SAFE) or "/"
    if path != "/" and path.endswith("/"):
        path = path[:-1]
    kept = [
        (name, value)
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
        if not is_tracking(name)
    ]
    query = urlencode(sorted(kept))
    folded = f"{host}{path}" + (f"?{query}" if query else "")
    return folded.lower()


def result_key(url: str) -> str:
    """The stored key of a result: SHA-256 of its canonical URL."""
    return hashlib.sha256(canonical_url(url).encode()).hexdigest()


def in_domains(host: str, domains: Iterable[str]) -> bool:
    """Is `host` one of `domains` or a subdomain of one? (``www.`` aside.)"""
    for domain in domains:
        domain = domain.lower().removeprefix("www.")
        if host == domain or host.endswith("." + domain):
            return True
    return False


def domain_allowed(
    url: str, include: Iterable[str] = (), exclude: Iterable[str] = ()
) -> bool:
    """The target's domain rules: only `include` when it is given, never
    `exclude`."""
    host = host_of(url)
    include = list(include)
    if include and not in_domains(host, include):
        return False
    return not in_domains(host, exclude)
