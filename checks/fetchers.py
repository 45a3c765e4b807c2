"""How a page job is fetched: one Fetcher class per way of getting a page.

Today that is plain HTTP through the one outbound door (checks.fetch); a
browser fetcher arrives as a second class behind the same small interface.
A fetcher raises checks.fetch.FetchError for anything that produced no
response; HTTP error statuses are responses, judged by checks.pages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from checks.fetch import FetchResult, OutboundClient
from checks.sources import PageJob


class Fetcher(Protocol):
    async def fetch(self, job: PageJob, headers: Mapping[str, str]) -> FetchResult: ...

    async def aclose(self) -> None: ...


class HttpFetcher:
    """Pages over HTTP(S), under the client's one limiter (overall and per host)."""

    def __init__(self, client: OutboundClient) -> None:
        self.client = client

    async def fetch(self, job: PageJob, headers: Mapping[str, str]) -> FetchResult:
        return await self.client.fetch(
            job.url, headers=headers, timeout=job.timeout, verify=job.verify_tls
        )

    async def aclose(self) -> None:
        await self.client.aclose()
