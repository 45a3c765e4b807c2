"""SearchSource: a search target's page jobs, one per result its web search
found this check, and its SearchRun row.

The search itself is run before (checks.search.gather.search, asked by the
search kind when the check is planned); this only turns what it gathered into
pages. What each result is -- new, seen before, judged -- is decided per batch
(checks.search.stage), where the result's page is fetched and judged if need
be. A search that failed is recorded as failed on the SearchRun row and in
targetResults; its page list (the API's and the webhook's, as Firecrawl's)
shows it as one error page under the provider's address, with the reason.
"""

from __future__ import annotations

import uuid
from typing import Any

from checks.jobs import PageJob
from checks.models import Check
from checks.search.gather import Gathered
from checks.search.models import SearchRun
from monitors.models import Target


class SearchSource:
    """Planned once per check (a taken-over check keeps its batches)."""

    def __init__(
        self, target: Target, provider: str, endpoint: str, gathered: Gathered
    ) -> None:
        self.target = target
        self.provider = provider
        self.endpoint = endpoint
        self.gathered = gathered

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
            "type": self.target.type,
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
