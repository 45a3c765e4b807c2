"""Links a crawl keeps waiting for room near its limit (CrawlPage.waiting):
once no batch of the check is open, they are admitted by depth and then
address, as far as each crawl's limit allows, so a site larger than the
limit is the same pages on every check (checks.crawl.frontier makes them
wait)."""

from __future__ import annotations

import uuid

from django.db import transaction

from checks.crawl.frontier import (
    LIMIT_REASON,
    page_limit,
    past_deadline,
    schedule,
    scope_of,
    truncate,
)
from checks.crawl.models import Crawl, CrawlPage
from checks.crawl.scope import Link
from checks.models import Check, CheckBatch
from monitors.models import Target


def admit_waiting(check_id: uuid.UUID) -> list[CheckBatch]:
    """Once no batch of the check is open: the links that waited for room
    (CrawlPage.waiting), by depth and then address, as far as each crawl's
    limit allows; the new batches (committed). Their own links may wait in
    turn, for the next time no batch is open."""
    batches = CheckBatch.objects.filter(check_run_id=check_id)
    waiting = CrawlPage.objects.filter(crawl__check_run_id=check_id, waiting=True)
    # Asked first without the lock: most batches end while others are open.
    if batches.open().exists() or not waiting.exists():
        return []
    with transaction.atomic():
        check = Check.objects.select_for_update().get(pk=check_id)
        if check.status != Check.Status.RUNNING or batches.open().exists():
            return []
        ids = set(waiting.values_list("crawl_id", flat=True))
        targets = {t.id: t for t in check.monitor.targets.all()}
        added: list[CheckBatch] = []
        for row in Crawl.objects.filter(pk__in=ids, closed=False):
            target = targets.get(row.target_id)
            if target is not None:
                added += _admit_waiting(check, row, target)
        return added


def _admit_waiting(check: Check, row: Crawl, target: Target) -> list[CheckBatch]:
    waiting = CrawlPage.objects.filter(crawl=row, waiting=True)
    if past_deadline(check, row):
        return []
    limit = page_limit(target)
    chosen = list(waiting.order_by("depth", "url")[: max(limit - row.found, 0)])
    if waiting.count() > len(chosen):
        truncate(row, LIMIT_REASON.format(limit=limit))
    if not chosen:
        return []
    CrawlPage.objects.filter(pk__in=[page.pk for page in chosen]).update(waiting=False)
    scope = scope_of(target, row)
    links = [
        Link(page.url, page.key, page.depth, follow=scope.is_internal(page.url))
        for page in chosen
    ]
    return schedule(check, row, target, links)
