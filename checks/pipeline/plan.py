"""The plan stage: a check -> its batches; a batch -> its pages' work.

A check is planned once: each target's kind plans its source (sources), and
the page jobs go into CheckBatch rows of CHECK_BATCH_SIZE pages, grouped as
each kind says (a crawl's pages in batches of their own), the pages the
browser will fetch in batches of BROWSER_BATCH_SIZE for its queue. A check
taken over keeps the batches (and scrape ids) its first worker planned.

The plan chooses each page's fetcher (`choose`): the browser's pages go in
batches of their own. When a batch runs, its refs become PageWork: each job
rebuilt with its target's current options and the fetcher chosen for it,
beside its baseline.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F

from checks import shared_clock
from checks.browser.executable import available
from checks.browser.options import browser_options
from checks.content import ChangeRules
from checks.fetch import Resolver
from checks.jobs import PageJob, Via
from checks.models import Check, CheckBatch, PageResult, PageState
from checks.pipeline import sources
from checks.pipeline.outcome import CheckAbandoned, PageWork
from monitors.models import Monitor, Target
from monitors.target_kinds import TargetKind

DELETED_MESSAGE = "Monitor was deleted before the check finished."

Planned = list[tuple[sources.Source, list[PageJob]]]


class NotPlanned(Exception):
    """The check has nothing it can run; the message says why, for its end."""


def plan(check: Check, resolver: Resolver | None = None) -> list[CheckBatch]:
    """The check's open batches, planned once. Raises NotPlanned when it has
    nothing to run, CheckAbandoned when it stopped being ours."""
    batches = list(check.batches.all())
    if not batches:
        batches = _plan(check, resolver)
    return [b for b in batches if b.status in CheckBatch.OPEN]


def _plan(check: Check, resolver: Resolver | None) -> list[CheckBatch]:
    monitor = Monitor.objects.get(pk=check.monitor_id)
    if monitor.deleted_at is not None:
        raise NotPlanned(DELETED_MESSAGE)
    planned = sources.plan(check, list(monitor.targets.all()), resolver)
    remembered = set(
        PageState.objects.filter(monitor=monitor, fetcher="browser").values_list(
            "target_id", "url_hash"
        )
    )
    target_results = [source.target_result() for source, _ in planned]
    if planned and all(isinstance(s, sources.SkippedTarget) for s, _ in planned):
        raise NotPlanned(" ".join(r["reason"] for r in target_results))
    recorded = sum(job.record for _, jobs in planned for job in jobs)
    with transaction.atomic():
        if Check.objects.lock(check.pk, Check.Status.RUNNING) is None:
            raise CheckAbandoned
        if check.batches.exists():
            # A worker that took the check over while this one was slow to
            # plan it wrote its plan first: that plan stands.
            return list(check.batches.all())
        Check.objects.filter(pk=check.pk).update(
            pages_total=recorded,
            target_results=target_results,
            updated_at=shared_clock.now(),
        )
        for source, jobs in planned:
            source.persist(check, jobs)
        CheckBatch.objects.bulk_create(
            _batches(check, planned, remembered, monitor.fetch_with),
            ignore_conflicts=True,
        )
    return list(check.batches.all())


def _batches(
    check: Check,
    planned: Planned,
    remembered: set[tuple[uuid.UUID, str]],
    fetch_with: str,
) -> list[CheckBatch]:
    """CHECK_BATCH_SIZE pages each, grouped as each target's kind says
    (pages of every target together, a crawl's pages in batches of their
    own); the pages the browser will fetch in batches of their own too, of
    BROWSER_BATCH_SIZE, for its queue."""
    groups: dict[tuple[object, bool], list[PageJob]] = {}
    for source, jobs in planned:
        kind = source.target.kind
        group = kind.batch_group(source.target) if kind is not None else "pages"
        for job in jobs:
            key = (job.target_id, PageState.hash_url(job.url))
            job = replace(job, fetch_with=fetch_with)
            uses_browser = bool(
                choose(job, "browser" if key in remembered else "").browser
            )
            groups.setdefault((group, uses_browser), []).append(job)
    now, batches = shared_clock.now(), []
    sizes = {False: settings.CHECK_BATCH_SIZE, True: settings.BROWSER_BATCH_SIZE}
    for (_, uses_browser), jobs in groups.items():
        size = int(sizes[uses_browser])
        for start in range(0, len(jobs), size):
            refs = [job.ref() for job in jobs[start : start + size]]
            batches.append(
                CheckBatch(
                    check_run=check,
                    number=len(batches),
                    pages=refs,
                    heartbeat_at=now,
                    uses_browser=uses_browser,
                )
            )
    return batches


def choose(job: PageJob, remembered: str) -> PageJob:
    """The job, with the fetcher it gets: the browser when its options need
    one or its monitor always uses one (a page error says so when there is
    none), when an earlier check found the page built by scripts
    (`remembered`, PageState.fetcher) and a browser is there, or when this
    check's plain fetch found it so (a job handed over keeps that); plain
    HTTP otherwise, and always for a monitor set to plain HTTP."""
    if job.browser == Via.DETECTED:
        return job
    needed = browser_options(job.options)
    if needed:
        return job.via(Via.OPTIONS, ", ".join(needed))
    if job.fetch_with == "browser":
        return job.via(Via.MONITOR)
    if job.fetch_with == "http":
        return job.via("")
    if remembered == "browser" and available():
        return job.via(Via.REMEMBERED)
    return job.via("")


# --- A batch's pages ------------------------------------------------------------


def batch_pages(
    check: Check, batch: CheckBatch
) -> tuple[list[PageWork], list[TargetKind]]:
    """The batch's pages not recorded yet (an earlier worker may have written
    some before it died), each job with its target's current options and the
    fetcher chosen for it, beside its baseline; and the kinds of their
    targets."""
    jobs, kinds = _jobs(check, batch)
    states = baselines(check.monitor, jobs)
    work = []
    for job in jobs:
        state = states.get((job.target_id, PageState.hash_url(job.url)))
        job = choose(job, state.fetcher if state is not None else "")
        work.append(PageWork(job, state))
    return work, kinds


def _jobs(check: Check, batch: CheckBatch) -> tuple[list[PageJob], list[TargetKind]]:
    targets: dict[uuid.UUID, Target] = {t.id: t for t in check.monitor.targets.all()}
    urls = [ref[1] for ref in batch.pages]
    done = set(
        PageResult.objects.filter(check_run=check, url__in=urls).values_list(
            "target_id", "url"
        )
    )
    ignored = tuple(check.monitor.ignore_lines or ())
    fetch_with = check.monitor.fetch_with
    change_rules = ChangeRules.of(check.monitor.change_rules)
    jobs, kinds = [], {}
    for ref in batch.pages:
        target = targets.get(uuid.UUID(ref[0]))
        if target is None or (target.id, ref[1]) in done:
            continue  # its target was deleted meanwhile, or recorded already
        credits, options = target.credits_per_page(), target.scrape_options or {}
        jobs.append(
            PageJob.from_ref(
                ref,
                options,
                credits,
                ignore_lines=ignored,
                fetch_with=fetch_with,
                change_rules=change_rules,
            )
        )
        if target.kind is not None:
            kinds[target.type] = target.kind
    return jobs, list(kinds.values())


def baselines(monitor: Monitor, jobs: Sequence[PageJob]) -> dict[Any, PageState]:
    """The baselines of these pages, with what the extract stage reads of
    their snapshots (never the blobs: compare reads those for a changed page)."""
    rows = PageState.objects.filter(
        monitor=monitor,
        target_id__in={job.target_id for job in jobs},
        url_hash__in=[PageState.hash_url(job.url) for job in jobs],
    ).annotate(
        snapshot_hash=F("snapshot__content_hash"),
        snapshot_format=F("snapshot__format"),
        snapshot_size=F("snapshot__size"),
    )
    return {(state.target_id, state.url_hash): state for state in rows}
