"""CrawlSource: a crawl target's first page jobs (the start URL and its
sitemap's pages) and its Crawl row; the rest of its pages are admitted as the
crawl goes (checks.crawl.frontier)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from checks.crawl import frontier, known
from checks.crawl.discovery import Discovery, discover
from checks.crawl.models import Crawl, CrawlPage
from checks.crawl.scope import Link, Scope
from checks.errors import error_words
from checks.fetch import Resolver
from checks.jobs import PageJob, page_timeout, verifies_tls
from checks.models import Check
from monitors.models import Target

# Reasons are read by staff on the monitor list and the check page: in words,
# never option or setting names.
NO_SITEMAP_REASON = (
    "No sitemap was found, and this crawl checks only the pages a sitemap "
    "lists, so no page was checked."
)
# The robots.txt standard (RFC 9309) asks a crawler that cannot read it to
# keep off the whole site. The reason last: the reason is cut at 255 characters.
ROBOTS_UNREADABLE_REASON = (
    "No page was crawled, because a site whose robots.txt cannot be read counts "
    "as closed to crawlers, and this site's robots.txt could not be read ({why})."
)
# Why, in the words a failed page gets (checks.errors.error_words); the URL
# last: the reason is cut at 255 characters.
SITEMAP_FAILED_REASON = (
    "A sitemap could not be read this time. {why} Pages listed only there may "
    "be missing: {url}"
)
SITE_UNREACHABLE_REASON = (
    "No page was crawled, because the site could not be reached ({why})."
)
START_DISALLOWED_REASON = (
    "No page was crawled, because the site's robots.txt disallows the start page."
)


class CrawlSource:
    """Planned once per check (a taken-over check keeps its batches): reads
    robots.txt and the sitemaps through the one door."""

    def __init__(
        self,
        target: Target,
        stored: Mapping[str, Any],
        resolver: Resolver | None = None,
        alive: Callable[[], object] = lambda: None,
    ) -> None:
        self.target = target
        options = target.crawl_options or {}
        self.sitemap_mode = options.get("sitemap") or "include"
        self.discovery: Discovery = discover(
            Scope(target.url, options),
            sitemaps=self.sitemap_mode != "skip",
            resolver=resolver,
            alive=alive,
            verify=verifies_tls(target.scrape_options or {}),
            timeout=page_timeout(target.scrape_options or {}),
        )
        self.scope = self.discovery.scope
        self.sitemap_pages = 0  # set by _seeds
        self.seeds, self.truncated = self._seeds()

    def _seeds(self) -> tuple[list[tuple[Link, bool]], str]:
        """(link, record it) pairs at depth 0, within the crawl's limit."""
        scope, limit = self.scope, frontier.page_limit(self.target)
        seeds: dict[str, tuple[Link, bool]] = {}
        only = self.sitemap_mode == "only"
        if not only and scope.start and scope.robots_allow(scope.start):
            start = Link(scope.start, scope.key(scope.start), 0, follow=True)
            seeds[start.key] = (start, scope.matches_paths(start.url))
        listed = self._as_recorded(scope.links(self.discovery.sitemap_urls, 0))
        # The sitemaps' pages the crawl could take (sitemapPages): not those
        # of other sites, or that robots.txt or the crawl's paths keep out.
        self.sitemap_pages = len(listed)
        for link in listed:
            link = Link(link.url, link.key, 0, follow=link.follow and not only)
            seeds.setdefault(link.key, (link, True))
        recorded = [seed for seed in seeds.values() if seed[1]]
        if not only and scope.start and not seeds:  # robots.txt kept it out
            why = self.discovery.robots_unreadable
            if why and self.discovery.site_unreachable:
                return [], SITE_UNREACHABLE_REASON.format(why=why)
            if why:
                return [], ROBOTS_UNREADABLE_REASON.format(why=why)
            return [], START_DISALLOWED_REASON
        failed = self._sitemap_failed()
        if only and not recorded:
            return [], failed or NO_SITEMAP_REASON
        if len(recorded) > limit:
            kept = {id(seed) for seed in recorded[:limit]}
            chosen = [s for s in seeds.values() if not s[1] or id(s) in kept]
            return chosen, frontier.LIMIT_REASON.format(limit=limit)
        return list(seeds.values()), failed

    def _as_recorded(self, links: list[Link]) -> list[Link]:
        """These links, in their order, each page the target had under the
        address it had it (checks.crawl.known)."""
        target = self.target
        had, _ = known.respelled(target.monitor_id, target.id, self.scope, links)
        recorded = {link.key: link for link in had}
        return [recorded.get(link.key, link) for link in links]

    def _sitemap_failed(self) -> str:
        """Why the pages of a sitemap may be missing this time ("" when
        none may be): a sitemap that failed in a way that may pass, as a
        page the crawl follows does (frontier.may_pass). A sitemap that
        answers 404 is gone and hides nothing."""
        for url, (kind, status_code) in self.discovery.sitemaps_failed.items():
            if frontier.may_pass(kind, status_code):
                why = error_words(kind or "", status_code, "")
                return SITEMAP_FAILED_REASON.format(why=why, url=url)
        return ""

    @property
    def moved(self) -> bool:
        """Whether the crawl moved to the site its start URL redirects to."""
        return self.discovery.start_url != self.target.url

    def jobs(self) -> list[PageJob]:
        target = self.target
        credits, options = target.credits_per_page(), target.scrape_options or {}
        return [
            PageJob(
                target.id,
                link.url,
                options,
                credits,
                uuid.uuid4(),
                depth=0,
                follow=link.follow,
                record=record,
            )  # fmt: skip
            for link, record in self.seeds
        ]

    def persist(self, check: Check, jobs: list[PageJob]) -> None:
        """The Crawl row and its depth-0 frontier, in the planning transaction."""
        row, _ = Crawl.objects.get_or_create(
            check_run=check,
            target_id=self.target.id,
            defaults={
                "start_url": self.scope.start_url if self.moved else "",
                "robots": self.discovery.robots_txt,
                "truncated": self.truncated[:255],
                "found": sum(1 for job in jobs if job.record),
                "had": known.had(self.target.monitor_id, self.target.id),
            },
        )
        CrawlPage.objects.bulk_create(
            [
                CrawlPage(crawl=row, key=self.scope.key(job.url), url=job.url)
                for job in jobs
            ],
            ignore_conflicts=True,
        )

    def target_result(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "targetId": str(self.target.id),
            "type": self.target.type,
        }
        result["sitemapPages"] = self.sitemap_pages
        skipped = self.scope.not_applied()
        if skipped:
            result["notApplied"] = skipped
        return result
