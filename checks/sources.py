"""Where a check's pages come from: one Source class per kind of target.

A source turns a target into page jobs when the check is planned. Scrape
targets list their URLs; the next kinds (a crawl frontier, search results) are
new classes registered in SOURCES, not new branches in the runner. A target
type without a source is recorded in targetResults as skipped, with a reason.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol
from urllib.parse import urlsplit

from django.conf import settings

from checks.models import Check
from monitors.models import Target

# scrapeOptions.timeout (ms) is honoured within these bounds (seconds).
MIN_PAGE_TIMEOUT, MAX_PAGE_TIMEOUT = 1.0, 300.0
MOBILE_USER_AGENT_PREFIX = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) Mobile/15E148"
)


@dataclass(frozen=True)
class PageJob:
    """One URL of one target in one check."""

    target_id: uuid.UUID
    url: str
    options: Mapping[str, Any]
    credits: int
    scrape_id: uuid.UUID
    # The monitor's noise rule (checks.content.noise).
    ignore_lines: tuple[str, ...] = ()

    @property
    def headers(self) -> dict[str, str]:
        raw = self.options.get("headers")
        headers = (
            {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
        )
        wants_mobile = self.options.get("mobile") is True
        if wants_mobile and not any(k.lower() == "user-agent" for k in headers):
            headers["User-Agent"] = (
                f"{MOBILE_USER_AGENT_PREFIX} {settings.OUTBOUND_USER_AGENT}"
            )
        return headers

    @property
    def timeout(self) -> float | None:
        raw = self.options.get("timeout")
        if not isinstance(raw, int | float) or isinstance(raw, bool) or raw <= 0:
            return None
        return min(max(raw / 1000, MIN_PAGE_TIMEOUT), MAX_PAGE_TIMEOUT)

    @property
    def verify_tls(self) -> bool:
        return self.options.get("skipTlsVerification") is not True

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or ""


class Source(Protocol):
    """Page jobs of one target, and what targetResults says about it."""

    def jobs(self) -> list[PageJob]: ...

    def target_result(self) -> dict[str, Any]: ...


class ScrapeSource:
    """A scrape target: its list of URLs, in order.

    Scrape ids are kept in targetResults.expectedJobs, so a check planned
    again (a taken-over check) reuses them and its pages stay consistent.
    """

    def __init__(self, target: Target, stored: Mapping[str, Any]) -> None:
        self.target = target
        ids = stored.get("expectedJobs") or []
        if len(ids) != len(target.urls):
            ids = [str(uuid.uuid4()) for _ in target.urls]
        self.scrape_ids: list[str] = ids

    def jobs(self) -> list[PageJob]:
        target = self.target
        credits = target.credits_per_page()
        options = target.scrape_options or {}
        return [
            PageJob(target.id, url, options, credits, uuid.UUID(scrape_id))
            for url, scrape_id in zip(target.urls, self.scrape_ids, strict=True)
        ]

    def target_result(self) -> dict[str, Any]:
        return {
            "targetId": str(self.target.id),
            "type": self.target.type,
            "expectedJobs": self.scrape_ids,
        }


SOURCES: dict[str, type[ScrapeSource]] = {Target.Type.SCRAPE: ScrapeSource}


class SkippedTarget:
    """A target whose type no source handles yet: no pages, a stated reason."""

    reason: ClassVar[str] = (
        "{kind} targets are not supported yet; this target was skipped."
    )

    def __init__(self, target: Target) -> None:
        self.target = target

    def jobs(self) -> list[PageJob]:
        return []

    def target_result(self) -> dict[str, Any]:
        return {
            "targetId": str(self.target.id),
            "type": self.target.type,
            "skipped": True,
            "reason": self.reason.format(kind=self.target.type.capitalize()),
        }


def source_for(target: Target, stored: Mapping[str, Any]) -> Source:
    kind = SOURCES.get(target.type) if target.is_checked else None
    return SkippedTarget(target) if kind is None else kind(target, stored)


def plan(check: Check, targets: Sequence[Target]) -> tuple[list[PageJob], list[dict]]:
    """The pages to check and the check's targetResults."""
    stored = {r.get("targetId"): r for r in check.target_results or []}
    jobs: list[PageJob] = []
    results: list[dict] = []
    for target in targets:
        source = source_for(target, stored.get(str(target.id), {}))
        jobs.extend(source.jobs())
        results.append(source.target_result())
    return jobs, results
