"""What every search provider shares: the query it is asked, the hits it
answers, its errors, and JSON over the one outbound door.

A provider is one class (searxng.py, brave.py, tavily.py, firecrawl.py) with
`search(query) -> list[Hit]`; every failure is a SearchError whose message
names the provider and is safe to show. Its requests go through checks.fetch
like every other: the address policy, a time-out and a byte cap, no
redirects. The configured provider's host is the only private address they
may reach (a SearXNG on the same network, say), as the LLM host is for the
model's requests.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings

from checks.errors import ErrorKind, plain, service_words
from checks.fetch import FetchError, FetchResult, OutboundClient, Resolver
from checks.fetch.errors import human_size

# An answer larger than this is refused by the door.
MAX_ANSWER_BYTES = 2 * 1024 * 1024
# Requests to the provider at a time (queries of one target run together).
CONCURRENCY = 4
# searchWindow as a length of time.
WINDOWS: dict[str, timedelta] = {
    "5m": timedelta(minutes=5),
    "15m": timedelta(minutes=15),
    "1h": timedelta(hours=1),
    "6h": timedelta(hours=6),
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
}


class SearchError(Exception):
    """A query got no usable answer; `message` is safe to show a user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Query:
    """One query of a search target, with the target's rules."""

    text: str
    window: str = "24h"
    limit: int = 10
    include_domains: tuple[str, ...] = ()
    exclude_domains: tuple[str, ...] = ()

    @property
    def within(self) -> timedelta:
        return WINDOWS.get(self.window, WINDOWS["24h"])


@dataclass(frozen=True)
class Hit:
    """One result as the provider gave it."""

    url: str
    title: str = ""
    snippet: str = ""
    published: datetime | None = None
    position: int = 0


def published(value: Any) -> datetime | None:
    """An ISO 8601 date or date-time (UTC when it has no zone); None for
    anything else, relative phrases ("2 hours ago") included."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip().replace("Z", "+00:00")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class Provider:
    """Base of the provider classes: JSON requests through the door."""

    name: ClassVar[str]
    label: ClassVar[str]
    # The setting to check when the provider refuses our credentials.
    key_setting: ClassVar[str] = ""

    def __init__(self, endpoint: str, *, resolver: Resolver | None = None) -> None:
        self.endpoint = endpoint  # where the search is sent
        parts = urlsplit(endpoint)
        # The address a failed search's error page is recorded under, which
        # API callers read: never a user name, password or query string.
        netloc = parts.netloc.rpartition("@")[2]
        self.address = urlunsplit((parts.scheme, netloc, parts.path, "", ""))
        host = (parts.hostname or "").lower()
        self._client = OutboundClient(
            resolver=resolver,
            concurrency=CONCURRENCY,
            per_host_concurrency=CONCURRENCY,
            private_hosts=frozenset({host}),
        )

    async def __aenter__(self) -> Provider:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()

    async def search(self, query: Query) -> list[Hit]:
        raise NotImplementedError

    @property
    def timeout(self) -> float:
        return float(getattr(settings, "SEARCH_TIMEOUT_SECONDS", 20))

    async def _json(
        self,
        url: str,
        *,
        method: str = "GET",
        headers: dict[str, str] | None = None,
        body: Any = None,
    ) -> Any:
        """The provider's JSON answer; SearchError for anything else."""
        sent = {"Accept": "application/json", **(headers or {})}
        content = None
        if body is not None:
            sent["Content-Type"] = "application/json"
            content = json.dumps(body).encode()
        try:
            answer = await self._client.fetch(
                url,
                method=method,
                headers=sent,
                content=content,
                timeout=self.timeout,
                max_bytes=MAX_ANSWER_BYTES,
                follow_redirects=False,
            )
        except FetchError as exc:
            if exc.kind == ErrorKind.TOO_LARGE:  # it was reached, and answered
                raise SearchError(
                    f"{self.label}'s answer was larger than "
                    f"{human_size(MAX_ANSWER_BYTES)}, so it was not read."
                ) from None
            raise SearchError(
                f"{self.label} could not be reached: {exc.message.rstrip('.')}."
            ) from None
        if answer.status_code >= 300:
            raise SearchError(self.refused(answer))
        try:
            return json.loads(answer.content)
        except (ValueError, RecursionError):  # nested past what the parser reads
            raise SearchError(
                f"{self.label} answered with something other than JSON."
            ) from None

    def refused(self, answer: FetchResult) -> str:
        """Why a non-2xx answer gave no results, with what to do about it."""
        code = answer.status_code
        reason = f"{self.label} answered HTTP {code}"
        detail = service_words(answer.content)
        if detail:
            reason += f" ({detail})"
        if code in (401, 403) and self.key_setting:
            return f"{reason}. Check {self.key_setting}."
        if code == 429:
            return f"{reason}: too many requests, or the plan's limit was reached."
        return reason + "."


class KeyedProvider(Provider):
    """A hosted search API paid for with a key, asked at `endpoint` (its
    public one, `default_endpoint`, unless another is given)."""

    default_endpoint: ClassVar[str] = ""

    def __init__(
        self, api_key: str, endpoint: str = "", *, resolver: Resolver | None = None
    ) -> None:
        super().__init__(endpoint or self.default_endpoint, resolver=resolver)
        self._key = api_key


def hit(
    row: dict[str, Any], position: int, *, title: Any, snippet: Any, date: Any
) -> Hit | None:
    """One provider row as a Hit, from the values its fields hold; None
    without a URL."""
    url = row.get("url")
    if not isinstance(url, str):
        return None
    return Hit(
        url=url.strip(),
        title=plain(title, 500),
        snippet=plain(snippet),
        published=published(date),
        position=position,
    )


def hits(rows: Any, limit: int, read: Any) -> list[Hit]:
    """Up to `limit` hits read from a provider's list of rows by `read(row,
    position) -> Hit | None`; rows that are not objects are skipped."""
    found: list[Hit] = []
    for row in rows if isinstance(rows, list) else []:
        if len(found) >= limit:
            break
        hit = read(row, len(found) + 1) if isinstance(row, dict) else None
        if hit is not None and isinstance(hit.url, str) and hit.url:
            found.append(hit)
    return found
