"""SearchSource: a search target's page jobs, one per result its web search
found this check, and its SearchRun row.

The search itself is run before (checks.search.gather.search, asked by the
search kind when the check is planned); this only turns what it gathered into
pages. What each result is -- new, seen before, judged -- is decided per batch
(checks.search.stage), where the result's page is fetched and judged if need
be. A search that failed is no page: it is recorded as failed on the
SearchRun row and in targetResults (`searchCompleted: false`, the reason in
`degradedReason`), as Firecrawl reports it, and the search kind tells the
check so (checks.targets.search.SearchKind.failure).
"""

from __future__ import annotations

import uuid
from typing import Any

from checks.jobs import PageJob
from checks.models import Check
from checks.search.gather import Gathered
from checks.search.models import SearchRun
from monitors.models import Target

# The failed search's reason as targetResults gives it, and as the check's
# error, its e-mails and its messages say it.
SEARCH_FAILED = "The web search failed: {failure}"


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
        reason = SEARCH_FAILED.format(failure=failure) if failure else None
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
            "degradedReason": reason,
            "searchCredits": gathered.credits,
            "judgeCredits": 0,
            "resultsJudged": 0,
        }
