"""A page the crawl had that the site's robots.txt now keeps crawlers off.

It was not looked at, so it is not known to be gone: for a while it keeps its
baseline and is listed as not checked, saying why, and compares as before
once robots.txt lets crawlers back. A ban that lasts KEPT_OUT_CHECKS checks in
a row is taken as the site's answer: the page is reported removed, once,
saying why, and is no longer one of the crawl's pages.
"""

from __future__ import annotations

import uuid

from checks.jobs import PageJob
from checks.models import Check, PageResult, PageState
from checks.pipeline.outcome import Item, Outcome
from monitors.models import Target

KEPT_OUT_CHECKS = 3
NOT_CHECKED = (
    "Not checked: the site's robots.txt now asks crawlers to stay out of this "
    "page. Its last copy is kept, and it is reported removed should robots.txt "
    f"still keep crawlers out {KEPT_OUT_CHECKS} checks in a row."
)
REMOVED = "The site's robots.txt now asks crawlers to stay out."


def kept_out(check: Check, target: Target, state: PageState) -> Item:
    """This check's result for `state`'s page, which robots.txt keeps out."""
    job = PageJob(target.id, state.url, target.scrape_options or {}, 0, uuid.uuid4())
    metadata = {"sourceURL": state.url, "url": state.url, "creditsUsed": 0}
    metadata["title"] = state.metadata.get("title")
    if _checks_kept_out(check, target, state) + 1 >= KEPT_OUT_CHECKS:
        outcome = Outcome(PageResult.Status.REMOVED, metadata, error=REMOVED)
    else:
        outcome = Outcome(PageResult.Status.ERROR, metadata, error=NOT_CHECKED)
    return Item(job, outcome, state)


def _checks_kept_out(check: Check, target: Target, state: PageState) -> int:
    """The checks before this one that robots.txt kept off the page since it
    was last fetched: a fetch starts the count again."""
    since = Check.objects.filter(monitor_id=check.monitor_id).exclude(pk=check.pk)
    if state.fetched_at is not None:
        since = since.filter(created_at__gt=state.fetched_at)
    return PageResult.objects.filter(
        check_run_id__in=since.values("pk"),
        status=PageResult.Status.ERROR,
        target_id=target.id,
        url=state.url,
        error=NOT_CHECKED,
    ).count()
