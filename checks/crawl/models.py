"""A crawl's rows: one per crawl target in a check, and its frontier of
admitted pages."""

from __future__ import annotations

import uuid
from collections import defaultdict

from django.db import models


class CrawlQuerySet(models.QuerySet["Crawl"]):
    def reasons(self) -> dict[uuid.UUID, str]:
        """Why these crawls did not reach everything, by check: the words the
        check page and the API give (truncatedReason), each sentence once."""
        said: dict[uuid.UUID, list[str]] = defaultdict(list)
        rows = self.exclude(truncated="").order_by("pk")
        for check_id, reason in rows.values_list("check_run_id", "truncated"):
            if reason not in said[check_id]:
                said[check_id].append(reason)
        return {check_id: " ".join(reasons) for check_id, reasons in said.items()}


class Crawl(models.Model):
    """One crawl target's crawl within one check (checks.crawl): what it has
    found so far, whether it was cut short, and the robots.txt it obeys.

    Rows of CrawlPage are the frontier: every URL admitted to this crawl, once
    (the unique key is the URL as checks.crawl.scope folds it). Both are
    written in the transaction that plans or admits pages, so a crawl whose
    worker dies is resumed from the same frontier."""

    check_run = models.ForeignKey(
        "checks.Check", on_delete=models.CASCADE, related_name="crawls", db_index=False
    )
    target_id = models.UUIDField()
    # Where the crawl started when its start URL redirected to another site
    # (checks.crawl.discovery); "" when it started at the target's URL.
    start_url = models.URLField(max_length=2048, blank=True)
    # robots.txt of the start host as fetched when the check was planned
    # (empty: none; checks.crawl.discovery.DISALLOW_ALL: it could not be
    # read); other hosts' are fetched as they are met.
    robots = models.TextField(blank=True)
    found = models.PositiveIntegerField(default=0)
    # Pages the target had before this check (checks.crawl.known): while
    # they may still be met, a crawl near its limit keeps room for them.
    had = models.PositiveIntegerField(default=0)
    # Why the crawl did not reach everything ("" when it did): such a crawl
    # reports no removed pages.
    truncated = models.CharField(max_length=255, blank=True)
    # Set by the one worker that records the removed pages, at the end.
    closed = models.BooleanField(default=False)

    objects = CrawlQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["check_run", "target_id"], name="one_crawl_per_target"
            )
        ]

    def __str__(self) -> str:
        return f"crawl of target {self.target_id} in check {self.check_run_id}"

    @property
    def public_id(self) -> uuid.UUID:
        """The crawl's id in the API, a UUID as Firecrawl's are. One crawl per
        target per check, so it is made from both: stable, and no column."""
        return uuid.uuid5(self.check_run_id, str(self.target_id))


class CrawlPage(models.Model):
    crawl = models.ForeignKey(
        Crawl, on_delete=models.CASCADE, related_name="pages", db_index=False
    )
    key = models.CharField(max_length=64)
    url = models.URLField(max_length=2048)
    depth = models.PositiveSmallIntegerField(default=0)
    # A link to a page the target did not have, met when the crawl's limit
    # might not leave room for it: not fetched (nor counted in `found`)
    # unless room is left once every batch is done, taken then by depth and
    # address, so the pages chosen do not depend on which answered first.
    waiting = models.BooleanField(default=False)
    # A page fetched that names another address as canonical (a copy): the
    # address it names, admitted in its place; the copy itself is not
    # recorded nor counted (checks.crawl.frontier.Frontier.copies). Set
    # once, so a batch that runs again treats the page the same way.
    copy_of = models.URLField(max_length=2048, blank=True, default="")
    # The page at this address answered as no page this check (removed,
    # moved away, still gone, an error): a page naming it as its canonical
    # address is no copy of it, and records itself.
    no_page = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["crawl", "key"], name="one_page_per_key")
        ]

    def __str__(self) -> str:
        return self.url
