"""A search target's results for one check: the web search stage of its
plan, every query run, merged, cut to the target's rules.

    each query  -> the provider (its recency filter, its domain filter where
                   it has one), at most maxResults hits each
    merge       -> by rank across queries (every query's first hit, then
                   every second...), one result per canonical URL, which
                   remembers every query that found it
    rules       -> http(s) addresses only, none the address policy refuses
                   by its look (a literal private IP, localhost);
                   includeDomains / excludeDomains; searchWindow on the
                   publish time where the provider gives one
    cap         -> maxResults in all

A query that fails leaves the others' results standing and says why: the
target then reports an error, never "no new results".
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from checks.fetch.policy import allow_private_targets, host_block_reason
from checks.search.canonical import domain_allowed, result_key
from checks.search.providers import Hit, Provider, Query, SearchError
from monitors import rules
from monitors.models import Target
from monitors.time_words import wire_time
from monitors.url_rule import url_syntax_error

logger = logging.getLogger(__name__)

# Search credits, as Firecrawl bills them: 2 per 10 raw results, across queries.
CREDITS_PER_TEN_RESULTS = 2


def search_credits(raw_count: int) -> int:
    return math.ceil(max(raw_count, 0) / 10) * CREDITS_PER_TEN_RESULTS


@dataclass
class Found:
    """One result of the target: the first hit of its canonical URL, with
    every query that found it."""

    url: str
    key: str
    title: str
    snippet: str
    published: datetime | None
    queries: list[str]
    rank: tuple[int, int] = (0, 0)

    def as_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "key": self.key,
            "title": self.title,
            "snippet": self.snippet,
            "publishedAt": wire_time(self.published) if self.published else None,
            "queries": self.queries,
        }

    def absorb(self, hit: Hit, query: str) -> None:
        """Another query found it too: remember the query, fill what is missing."""
        if query not in self.queries:
            self.queries.append(query)
        self.title = self.title or hit.title
        self.snippet = self.snippet or hit.snippet
        self.published = self.published or hit.published


@dataclass
class Gathered:
    results: list[Found] = field(default_factory=list)
    raw_count: int = 0
    # "“query”: why", one per query that got no answer.
    failures: list[str] = field(default_factory=list)

    @property
    def failure(self) -> str:
        # Each reason is a sentence of its own ("… HTTP 500 (boom).").
        return " ".join(self.failures)

    @property
    def credits(self) -> int:
        return search_credits(self.raw_count)


def queries_of(target: Target) -> list[Query]:
    limit = target.max_results or rules.MAX_RESULTS_DEFAULT
    return [
        Query(
            text=text,
            window=target.search_window or rules.SEARCH_WINDOW_DEFAULT,
            limit=limit,
            include_domains=tuple(target.include_domains or ()),
            exclude_domains=tuple(target.exclude_domains or ()),
        )
        for text in target.queries or []
    ]


def search(provider: Provider, target: Target, now: datetime) -> Gathered:
    """Run the target's web search when its check is planned, as a crawl
    reads its sitemaps then: on an event loop of its own, through the one
    door. Never raises for the provider's problems (see Gathered.failures)."""

    async def searched() -> Gathered:
        async with provider:
            return await gather(provider, target, now)

    return asyncio.run(searched())


async def gather(provider: Provider, target: Target, now: datetime) -> Gathered:
    """Run the target's queries (together, under the provider's limiter)."""
    queries = queries_of(target)
    answers = await asyncio.gather(
        *(provider.search(query) for query in queries), return_exceptions=True
    )
    gathered = Gathered()
    ranked: list[tuple[tuple[int, int], Hit, str]] = []
    for index, (query, answer) in enumerate(zip(queries, answers, strict=True)):
        if isinstance(answer, BaseException):
            gathered.failures.append(f"“{query.text}”: {_reason(provider, answer)}")
            continue
        gathered.raw_count += len(answer)
        ranked += [((hit.position, index), hit, query.text) for hit in answer]
    kept: dict[str, Found] = {}
    for rank, hit, text in sorted(ranked, key=lambda item: item[0]):
        if not _fits(hit, queries[0] if queries else Query(""), now):
            continue
        key = result_key(hit.url)
        if key in kept:
            kept[key].absorb(hit, text)
            continue
        kept[key] = Found(
            hit.url, key, hit.title, hit.snippet, hit.published, [text], rank
        )
    limit = target.max_results or rules.MAX_RESULTS_DEFAULT
    gathered.results = list(kept.values())[:limit]
    return gathered


def _fits(hit: Hit, query: Query, now: datetime) -> bool:
    """The target's rules, which every query shares."""
    if url_syntax_error(hit.url) is not None:
        return False
    # As a crawl drops such links: reported, the result would alert with
    # judging off, or be a page no one may fetch on every check with it on.
    host = urlsplit(hit.url).hostname or ""
    if host_block_reason(host, allow_private_targets()) is not None:
        return False
    if not domain_allowed(hit.url, query.include_domains, query.exclude_domains):
        return False
    return hit.published is None or hit.published >= now - query.within


def _reason(provider: Provider, error: BaseException) -> str:
    if isinstance(error, SearchError):
        return error.message
    logger.error("Searching with %s crashed", provider.name, exc_info=error)
    return f"{provider.label} could not be asked because of an internal error."
