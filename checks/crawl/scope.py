"""Which URLs a crawl may visit, and when two URLs are the same page.

Pure rules, built once per crawl from the start URL, its crawlOptions and
robots.txt; no I/O. Firecrawl's semantics:

* internal pages: the start URL's host (``www.`` or not), its subdomains with
  `allowSubdomains`, and only below the start path unless `crawlEntireDomain`;
* `allowExternalLinks`: other sites' pages one hop away (fetched, their links
  not followed);
* `includePaths` / `excludePaths`: regexes searched in the path (the full URL
  with `regexOnFullURL`), compiled with RE2 so no pattern can backtrack for
  ever; `maxDepth`: path segments below the start URL's;
* `ignoreQueryParameters`: the query is dropped; `deduplicateSimilarURLs`
  (default on): www./no www, http/https, a trailing slash and index.html are
  one page, and so is a page with the canonical address it names
  (checks.crawl.canonical, applied by checks.crawl.frontier);
* links to files that are not pages (images, archives, media, office
  documents: FILE_EXTENSIONS) are not followed; PDFs are;
* robots.txt (protego) unless `ignoreRobotsTxt` is set and the operator allows
  it (CRAWL_ALLOW_IGNORE_ROBOTS).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from django.conf import settings
from protego import Protego
from w3lib.url import canonicalize_url

from checks.fetch import address_block_reason, ip_literal
from checks.targets.options import unknown_options
from monitors.rules import path_pattern

DEFAULT_PORTS = {"http": 80, "https": 443}
INDEX_PAGES = ("index.html", "index.htm", "index.php")
# Crawl-delay beyond this is honoured as this (a check has a time limit).
MAX_DELAY_SECONDS = 60.0
# Links to these are files, not pages: a crawl does not fetch them (as
# Firecrawl's crawler does not), since an image or an archive has no text to
# compare and would be a page that "could not be checked" on every check.
# PDFs are read as pages, so they are not here.
FILE_EXTENSIONS = (
    ".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif", ".bmp", ".ico", ".svg",
    ".tif", ".tiff", ".css", ".js", ".woff", ".woff2", ".ttf", ".otf", ".eot",
    ".zip", ".gz", ".tgz", ".rar", ".7z", ".exe", ".dmg", ".msi", ".apk", ".iso",
    ".mp4", ".m4v", ".mov", ".avi", ".flv", ".webm", ".mkv", ".mp3", ".m4a",
    ".wav", ".ogg", ".flac", ".doc", ".docx", ".xls", ".xlsx", ".ppt", ".pptx",
    ".inc",
)  # fmt: skip
# URLs whose place in the crawl a Scope remembers (see Scope._place); past
# this it starts afresh, so a sitemap of 50,000 URLs cannot pile them up.
PLACES_KEPT = 4096
# Keys Pagewatch reads from crawlOptions; the rest are listed as not applied.
APPLIED_OPTIONS = frozenset(
    {
        "limit", "maxDiscoveryDepth", "maxDepth", "includePaths", "excludePaths",
        "regexOnFullURL", "crawlEntireDomain", "allowSubdomains",
        "allowExternalLinks", "sitemap", "ignoreQueryParameters",
        "deduplicateSimilarURLs", "delay", "maxConcurrency", "ignoreRobotsTxt",
        "robotsUserAgent",
    }
)  # fmt: skip

# Query parameters that name the visitor's session or the campaign a link
# came from, not the page: a site that puts a new session id in every link
# would otherwise be a new page at every answer, without end.
SESSION_PARAMETERS = frozenset({"jsessionid", "phpsessid", "cfid", "cftoken"})
TRACKING_PREFIXES = ("utm_", "aspsessionid")
# Names that are a session on some sites and the page on others (PHP-Nuke's
# article.php?sid=124 is the article): dropped only when the value looks
# like a session token rather than an id.
GENERIC_SESSION_PARAMETERS = frozenset({"sid", "sessionid", "session_id"})
_SESSION_TOKEN = re.compile(r"[0-9A-Za-z]{16,}")
# A session id in the path, as Java servers write it: /page;jsessionid=ABC.
_PATH_SESSION = re.compile(r";(?:jsessionid|phpsessid|sid|sessionid)=[^/;?]*", re.I)

# "/docs//page" is "/docs/page" for a site's server, nearly always.
_DOUBLED_SLASHES = re.compile(r"/{2,}")

compile_pattern = path_pattern  # the rule the API and the form validate with


def user_agent_token(agent: str) -> str:
    """The product token robots.txt groups are matched against."""
    return agent.split("/", 1)[0].split()[0] if agent.strip() else "*"


def canonical(url: str, *, drop_query: bool = False) -> str | None:
    """The URL as fetched: http(s) only, no fragment, dot segments resolved,
    default port and case folded, query sorted (or dropped)."""
    try:
        parts = urlsplit(url)
        if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
            return None
        port = parts.port
        path = _without_dot_segments(parts.path or "/")
    except ValueError:
        return None
    netloc = parts.hostname.lower()
    if ":" in netloc:
        netloc = f"[{netloc}]"
    if port is not None and port != DEFAULT_PORTS[parts.scheme]:
        netloc = f"{netloc}:{port}"
    path = _PATH_SESSION.sub("", path)
    query = "" if drop_query else _without_sessions(parts.query)
    rebuilt = urlunsplit((parts.scheme, netloc, path or "/", query, ""))
    return canonicalize_url(rebuilt, keep_fragments=False)


def _without_dot_segments(path: str) -> str:
    """The path with its `.` and `..` segments resolved (RFC 3986, 5.2.4).
    Not by joining it to the URL: a path that starts with `//` would be read
    as a host, and its first segment lost."""
    kept: list[str] = []
    segments = path.split("/")
    for segment in segments[1:]:
        if segment == "..":
            if len(kept) > 0:
                kept.pop()
        elif segment != ".":
            kept.append(segment)
    if segments[-1] in (".", ".."):
        kept.append("")  # "/a/b/.." is the folder "/a/"
    return "/" + "/".join(kept)


def _without_sessions(query: str) -> str:
    """The query without its session ids and campaign tags (as given
    otherwise: canonicalize_url sorts and encodes it)."""
    if not query:
        return query
    pairs = parse_qsl(query, keep_blank_values=True)
    kept = [(name, value) for name, value in pairs if not _is_session(name, value)]
    return query if len(kept) == len(pairs) else urlencode(kept)


def without_index_page(path: str) -> str:
    """The path without its index page: "/docs/index.html" is "/docs/"."""
    for index in INDEX_PAGES:
        if path.endswith("/" + index):
            return path[: -len(index)]
    return path


def _is_session(name: str, value: str) -> bool:
    name = name.lower()
    if name in GENERIC_SESSION_PARAMETERS:
        return _SESSION_TOKEN.fullmatch(value) is not None
    return name in SESSION_PARAMETERS or name.startswith(TRACKING_PREFIXES)


def _bare_host(host: str) -> str:
    return host[4:] if host.startswith("www.") else host


@dataclass
class Scope:
    """The rules of one crawl (see the module's docstring)."""

    start_url: str
    options: Mapping[str, Any]
    robots_txt: str = ""
    agent: str = field(default_factory=lambda: settings.OUTBOUND_USER_AGENT)

    def __post_init__(self) -> None:
        opts = self.options
        self.drop_query = opts.get("ignoreQueryParameters") is True
        self.similar = opts.get("deduplicateSimilarURLs") is not False
        self.start = canonical(self.start_url, drop_query=self.drop_query) or ""
        start = urlsplit(self.start)
        self.host = _bare_host(start.hostname or "")
        self.port = start.port
        self.prefix = start.path.rstrip("/")
        if self.prefix.endswith(INDEX_PAGES):
            self.prefix = self.prefix.rsplit("/", 1)[0]
        self.start_depth = _segments(start.path)
        self.include = [compile_pattern(p) for p in opts.get("includePaths") or []]
        self.exclude = [compile_pattern(p) for p in opts.get("excludePaths") or []]
        self.ignore_robots = (
            opts.get("ignoreRobotsTxt") is True and settings.CRAWL_ALLOW_IGNORE_ROBOTS
        )
        custom_agent = opts.get("robotsUserAgent")
        allowed = settings.CRAWL_ALLOW_IGNORE_ROBOTS
        if allowed and isinstance(custom_agent, str) and custom_agent.strip():
            self.agent = custom_agent
        self.robots: dict[str, Protego | None] = {}
        # Hosts whose robots.txt is being read (claim_robots).
        self.reading: set[str] = set()
        self.remember_robots(self.host_of(self.start), self.robots_txt)
        self._places: dict[str, tuple[str, str, bool] | None] = {}

    # --- Identity ------------------------------------------------------------------

    def fetch_url(self, url: str) -> str | None:
        return canonical(url, drop_query=self.drop_query)

    def key(self, url: str) -> str:
        """Same key, same page (the frontier's unique key)."""
        parts = urlsplit(url)
        if not self.similar:
            return hashlib.sha256(url.encode()).hexdigest()
        path = _DOUBLED_SLASHES.sub("/", without_index_page(parts.path)).rstrip("/")
        netloc = _bare_host(parts.netloc)
        folded = f"{netloc}{path}?{parts.query}"
        return hashlib.sha256(folded.encode()).hexdigest()

    # --- Scope ---------------------------------------------------------------------

    @staticmethod
    def host_of(url: str) -> str:
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc}"

    def is_internal(self, url: str) -> bool:
        parts = urlsplit(url)
        host = _bare_host(parts.hostname or "")
        if parts.port != self.port:
            return False
        if host == self.host:
            return True
        return self.options.get("allowSubdomains") is True and host.endswith(
            "." + self.host
        )

    def is_same_site(self, url: str) -> bool:
        """Whether a URL the start URL led to is on the crawl's own site."""
        fetched = self.fetch_url(url)
        return fetched is None or self.is_internal(fetched)

    def in_section(self, url: str) -> bool:
        """Below the start path, unless the whole domain is crawled."""
        if self.options.get("crawlEntireDomain") is True or not self.prefix:
            return True
        path = urlsplit(url).path
        return path == self.prefix or path.startswith(self.prefix + "/")

    def matches_paths(self, url: str) -> bool:
        """includePaths / excludePaths (exclusion wins)."""
        parts = urlsplit(url)
        subject = url if self.options.get("regexOnFullURL") is True else parts.path
        if any(pattern.search(subject) for pattern in self.exclude):
            return False
        return not self.include or any(p.search(subject) for p in self.include)

    def within_depth(self, url: str) -> bool:
        limit = self.options.get("maxDepth")
        if not isinstance(limit, int) or isinstance(limit, bool):
            return True
        return _segments(urlsplit(url).path) - self.start_depth <= limit

    def link_depth_allows(self, depth: int) -> bool:
        limit = self.options.get("maxDiscoveryDepth")
        if not isinstance(limit, int) or isinstance(limit, bool):
            return True
        return depth <= limit

    def is_blocked_address(self, url: str) -> bool:
        """A literal address the outbound policy refuses (names are judged
        when fetched, by the one door)."""
        ip = ip_literal(urlsplit(url).hostname or "")
        if ip is None:
            return False
        return (
            address_block_reason(ip, settings.ALLOW_PRIVATE_NETWORK_TARGETS) is not None
        )

    # --- robots.txt ----------------------------------------------------------------

    def obey(self, robots_txt: str) -> None:
        """The start host's robots.txt, once it is read."""
        self.robots_txt = robots_txt
        self.remember_robots(self.host_of(self.start), robots_txt)

    def knows_robots(self, origin: str) -> bool:
        """Whether the rules of a host are known: read, or ignored. A host
        whose robots.txt is being read (claim_robots) is not known yet,
        though the crawl asks for it no more."""
        return self.ignore_robots or (
            origin in self.robots and origin not in self.reading
        )

    def claim_robots(self, origin: str) -> None:
        """A host whose robots.txt this crawl is about to read: one read per
        host, whoever meets it next while it is read."""
        self.robots[origin] = None
        self.reading.add(origin)

    def remember_robots(self, origin: str, text: str) -> None:
        self.robots[origin] = Protego.parse(text) if text.strip() else None
        self.reading.discard(origin)

    def robots_allow(self, url: str) -> bool:
        if self.ignore_robots:
            return True
        rules = self.robots.get(self.host_of(url))
        return rules is None or rules.can_fetch(url, user_agent_token(self.agent))

    def delay(self) -> float:
        """Seconds between two requests: `delay`, or robots' Crawl-delay."""
        asked = self.options.get("delay")
        seconds = float(asked) if isinstance(asked, int | float) else 0.0
        rules = (
            None if self.ignore_robots else self.robots.get(self.host_of(self.start))
        )
        if rules is not None:
            robots_delay = rules.crawl_delay(user_agent_token(self.agent))
            seconds = max(seconds, float(robots_delay or 0))
        return min(seconds, MAX_DELAY_SECONDS)

    # --- Putting it together -------------------------------------------------------

    def admit(
        self, url: str, depth: int, *, from_external: bool = False
    ) -> Link | None:
        """A found URL as the crawl would visit it, or None when it is out of
        scope. `depth` is its link depth (0 for the start URL and sitemaps)."""
        if from_external or not self.link_depth_allows(depth):
            return None
        place = self._place(url)
        if place is None or not self.robots_allow(place[0]):
            return None
        fetched, key, internal = place
        return Link(fetched, key, depth, follow=internal)

    def _place(self, url: str) -> tuple[str, str, bool] | None:
        """(URL as fetched, key, internal), or None when the crawl's own rules
        keep it out. Those rules never change during a crawl (robots.txt, which
        is learnt as it goes, is asked afterwards), and a site's navigation
        repeats on every page, so the answer is remembered per URL."""
        if url in self._places:
            return self._places[url]
        if len(self._places) >= PLACES_KEPT:
            self._places.clear()
        place = None
        fetched = self.fetch_url(url)
        if fetched is not None and self._within_rules(fetched):
            place = (fetched, self.key(fetched), self.is_internal(fetched))
        self._places[url] = place
        return place

    def _within_rules(self, fetched: str) -> bool:
        if self.is_blocked_address(fetched) or is_file(fetched):
            return False
        if not self.is_internal(fetched):
            external = self.options.get("allowExternalLinks") is True
            return external and self.matches_paths(fetched)
        return (
            self.in_section(fetched)
            and self.within_depth(fetched)
            and self.matches_paths(fetched)
        )

    def links(self, urls: Iterable[str], depth: int, **kwargs: Any) -> list[Link]:
        admitted: dict[str, Link] = {}
        for url in urls:
            link = self.admit(url, depth, **kwargs)
            if link is not None:
                admitted.setdefault(link.key, link)
        return list(admitted.values())

    def not_applied(self) -> list[str]:
        """crawlOptions kept but not honoured, for the target's metadata:
        unknown ones set to something, as for scrapeOptions."""
        skipped = unknown_options(self.options, APPLIED_OPTIONS)
        if self.options.get("ignoreRobotsTxt") is True and not self.ignore_robots:
            skipped.append("ignoreRobotsTxt")
        if (
            self.options.get("robotsUserAgent")
            and not settings.CRAWL_ALLOW_IGNORE_ROBOTS
        ):
            skipped.append("robotsUserAgent")
        return skipped


@dataclass(frozen=True)
class Link:
    url: str
    key: str
    depth: int
    follow: bool  # internal page: its links are crawled too


def is_file(url: str) -> bool:
    """Whether the URL's path names a file that is not a page (by its
    extension, the way a link shows it before anything is fetched)."""
    return urlsplit(url).path.lower().endswith(FILE_EXTENSIONS)


def _segments(path: str) -> int:
    return len([part for part in path.split("/") if part])
