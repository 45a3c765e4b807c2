"""Fake search providers on 127.0.0.1, each answering in its own API's shape.

    searx = FakeSearxng(site).configure(settings)  # SEARXNG_URL points at it
    searx.results("acme launch", hit(url, "Acme launches", published=...))
    searx.fail(500)            # every query answers HTTP 500 from now on
    searx.hang(3)              # every query answers after 3 s (time-outs)

FakeBrave, FakeTavily and FakeFirecrawl serve the same results in Brave's,
Tavily's and Firecrawl's shapes, and keep each request (headers, body) to
assert what the adapters sent. A test module registers the fixtures (searx,
model: a scripted judge, news: three result pages) with
`pytest_plugins = ["tests.searching"]`. PYTEST_DONT_REWRITE: no assertions
live here.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.sites import Request, Site

# The judge model's fixture, `model`, comes with this plugin's.
pytest_plugins = ["tests.llm"]

Answer = tuple[int, dict[str, str], bytes]


def hit(
    url: str,
    title: str = "",
    snippet: str = "",
    *,
    published: datetime | None = None,
) -> dict[str, Any]:
    """One result, provider-neutral (each fake writes it its own way)."""
    return {"url": url, "title": title, "snippet": snippet, "published": published}


def _json(status: int, payload: Any) -> Answer:
    return status, {"Content-Type": "application/json"}, json.dumps(payload).encode()


class FakeProvider:
    path = "/"

    def __init__(self, site: Site) -> None:
        self.site = site
        self.by_query: dict[str, list[dict[str, Any]]] = {}
        self.failure: Answer | None = None
        self.delay = 0.0
        self.released = threading.Event()  # set at teardown: hung answers end
        site.handle(self.path, self._answer)

    def results(self, query: str, *hits: dict[str, Any]) -> FakeProvider:
        self.by_query[query] = list(hits)
        return self

    def fail(self, status: int, body: Any = None) -> FakeProvider:
        self.failure = _json(status, body if body is not None else {"error": "boom"})
        return self

    def recover(self) -> FakeProvider:
        self.failure = None
        self.delay = 0.0
        return self

    def hang(self, seconds: float) -> FakeProvider:
        self.delay = seconds
        return self

    @property
    def requests(self) -> list[Request]:
        return self.site.requests_to(self.path)

    def query_of(self, request: Request) -> str:
        raise NotImplementedError

    def shape(self, hits: list[dict[str, Any]]) -> Any:
        raise NotImplementedError

    def _answer(self, request: Request) -> Answer:
        if self.delay:
            self.released.wait(self.delay)
        if self.failure is not None:
            return self.failure
        return _json(200, self.shape(self.by_query.get(self.query_of(request), [])))


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


class FakeSearxng(FakeProvider):
    path = "/search"

    def __init__(self, site: Site) -> None:
        super().__init__(site)
        self.unresponsive: list[list[str]] = []

    def configure(self, settings: Any) -> FakeSearxng:
        settings.SEARCH_PROVIDER = ""
        settings.SEARXNG_URL = self.site.base_url
        settings.SEARCH_TIMEOUT_SECONDS = 1
        return self

    def query_of(self, request: Request) -> str:
        return parse_qs(urlsplit(request.path).query).get("q", [""])[0]

    def params(self, request: Request) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(urlsplit(request.path).query).items()}

    def shape(self, hits: list[dict[str, Any]]) -> Any:
        return {
            "query": "",
            "number_of_results": len(hits),
            "results": [
                {
                    "url": h["url"],
                    "title": h["title"],
                    "content": h["snippet"],
                    "publishedDate": _iso(h["published"]),
                    "engine": "duckduckgo",
                    "engines": ["duckduckgo"],
                    "score": 1.0,
                    "category": "general",
                }
                for h in hits
            ],
            "answers": [],
            "corrections": [],
            "infoboxes": [],
            "suggestions": [],
            "unresponsive_engines": self.unresponsive,
        }


class FakeBrave(FakeProvider):
    path = "/res/v1/web/search"

    def query_of(self, request: Request) -> str:
        return parse_qs(urlsplit(request.path).query).get("q", [""])[0]

    def shape(self, hits: list[dict[str, Any]]) -> Any:
        return {
            "type": "search",
            "query": {"original": ""},
            "web": {
                "type": "search",
                "results": [
                    {
                        "type": "search_result",
                        "url": h["url"],
                        "title": h["title"],
                        "description": h["snippet"],
                        "page_age": _iso(h["published"]),
                        "age": "2 hours ago",
                        "meta_url": {"hostname": urlsplit(h["url"]).hostname},
                    }
                    for h in hits
                ],
            },
        }


class FakeTavily(FakeProvider):
    path = "/search"

    def query_of(self, request: Request) -> str:
        return json.loads(request.body or b"{}").get("query", "")

    def shape(self, hits: list[dict[str, Any]]) -> Any:
        return {
            "query": "",
            "results": [
                {
                    "url": h["url"],
                    "title": h["title"],
                    "content": h["snippet"],
                    "score": 0.9,
                    "published_date": _iso(h["published"]),
                }
                for h in hits
            ],
            "response_time": 0.5,
        }


class FakeFirecrawl(FakeProvider):
    path = "/v2/search"

    def query_of(self, request: Request) -> str:
        return json.loads(request.body or b"{}").get("query", "")

    def shape(self, hits: list[dict[str, Any]]) -> Any:
        return {
            "success": True,
            "data": {
                "web": [
                    {
                        "url": h["url"],
                        "title": h["title"],
                        "description": h["snippet"],
                        "position": index + 1,
                    }
                    for index, h in enumerate(hits)
                ]
            },
            "creditsUsed": 2,
        }


# --- fixtures -----------------------------------------------------------------------

LAUNCH = "<h1>Acme launches the Rocket</h1><p>Acme announced its launch today.</p>"
EARNINGS = "<h1>Acme earnings</h1><p>Quarterly numbers were flat.</p>"
RUMOUR = "<h1>Acme gossip</h1><p>A rumour says a launch is near.</p>"


@pytest.fixture
def searx(settings: Any) -> Iterator[FakeSearxng]:
    """A fake SearXNG that SEARXNG_URL points at."""
    with Site() as search_site:
        fake = FakeSearxng(search_site).configure(settings)
        yield fake
        fake.released.set()


@pytest.fixture
def news(site: Site) -> dict[str, str]:
    """Result pages on the test site: a launch (relevant to the tests' goal),
    earnings (not) and a rumour (relevant, the judge unsure)."""
    return {
        "launch": site.html("/launch", "Acme launches", LAUNCH),
        "earnings": site.html("/earnings", "Acme earnings", EARNINGS),
        "rumour": site.html("/rumour", "Acme gossip", RUMOUR),
    }
