"""SearchSource: a search target's page jobs, one per result the provider
found this check, and its SearchRun row.

The search itself runs when the check is planned (as a crawl reads its
sitemaps then), through the one door; what each result is -- new, seen
before, judged -- is decided per batch (checks.search.stage), where the
result's page is fetched and judged if need be. A query that failed adds one
error page, recorded under the provider's address with the reason.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from typing import Any

from django.utils import timezone

from checks.fetch import Resolver
from checks.jobs import PageJob
from checks.models import Check, SearchRun
from checks.search import providers
from checks.search.gather import Gathered, gather
from monitors.models import Target
from monitors.search_provider import not_run_reason


class SearchSource:
    """Planned once per check (a taken-over check keeps its batches)."""

    def __init__(
        self,
        target: Target,
        stored: Mapping[str, Any],
        resolver: Resolver | None = None,
    ) -> None:
        self.target = target
        provider = providers.configured(resolver)
        if provider is None:  # source_for() asks unavailable() first
            raise RuntimeError("no search provider is configured")
        self.provider = provider.name
        self.endpoint = provider.address
        self.gathered: Gathered = asyncio.run(self._gather(provider))

    @staticmethod
    def unavailable() -> str:
        return not_run_reason()

    async def _gather(self, provider: providers.Provider) -> Gathered:
        async with provider:
            return await gather(provider, self.target, timezone.now())

    def jobs(self) -> list[PageJob]:
        target = self.target
        urls = [found.url for found in self.gathered.results]
        if self.gathered.failures:
            urls.append(self.endpoint)  # the failed search's error page
        return [PageJob(target.id, url, {}, 0, uuid.uuid4()) for url in urls]

    def persist(self, check: Check, jobs: list[PageJob]) -> None:
        SearchRun.objects.get_or_create(
            check_run=check,
            target_id=self.target.id,
            defaults={
                "provider": self.provider,
                "results": [found.as_json() for found in self.gathered.results],
                "raw_count": self.gathered.raw_count,
                "failure": self.gathered.failure,
                "endpoint": self.endpoint,
            },
        )

    def target_result(self) -> dict[str, Any]:
        gathered = self.gathered
        failure = gathered.failure
        return {
            "targetId": str(self.target.id),
            "type": "search",
            "provider": self.provider,
            "searchCompleted": not failure,
            "resultCount": len(gathered.results),
            "rawResultCount": gathered.raw_count,
            "matches": 0,
            "summary": None,
            "judgeDegraded": False,
            "degradedReason": f"The search failed: {failure}" if failure else None,
            "searchCredits": gathered.credits,
            "judgeCredits": 0,
            "resultsJudged": 0,
        }
