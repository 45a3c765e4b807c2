"""The record stage: settled outcomes (compared, judged) written, a few
pages a transaction.

Each transaction records the pages' results, moves their baselines, writes
their notification outbox rows (the notify stage, checks.notify) and counts
them in the check's progress (which doubles as its heartbeat). A check that
stopped being ours (failed by the sweeper, deleted) gets no more pages:
CheckAbandoned tells the runner.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import F

from checks import notify, shared_clock
from checks.jobs import PageJob, Via
from checks.models import (
    Capture,
    Check,
    CheckBatch,
    PageResult,
    PageState,
    SearchResultState,
    Snapshot,
)
from checks.pipeline.outcome import (
    PER_CHECK_METADATA,
    CheckAbandoned,
    Item,
    Outcome,
    options_hash,
)

# Pages recorded per transaction, at most.
RECORD_BATCH = 20
_MICROSECOND = timedelta(microseconds=1)


def record_many(
    check: Check, items: Sequence[Item], batch: CheckBatch | None = None
) -> list[PageResult]:
    """Write pages' results, baselines and notifications in one transaction.

    Retried once on an integrity error: retention may delete an orphan
    snapshot in the instant between Snapshot.store_many() finding it and the
    commit."""
    # A crawl's start page outside includePaths was fetched for its links only.
    items = [item for item in items if item[0].record]
    if not items:
        return []
    assert all(item[1].pending is None for item in items), "compare comes first"
    for attempt in (1, 2):
        try:
            with transaction.atomic():
                return _record_many(check, items, batch)
        except IntegrityError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _record_many(
    check: Check, items: Sequence[Item], batch: CheckBatch | None
) -> list[PageResult]:
    now = shared_clock.now()
    # First, so a check the sweeper already failed gets no more pages (the
    # update also locks the check row until these pages are committed).
    alive = Check.objects.filter(pk=check.pk, status=Check.Status.RUNNING).update(
        pages_done=F("pages_done") + len(items), heartbeat_at=now, updated_at=now
    )
    if not alive:
        raise CheckAbandoned
    if batch is not None:
        CheckBatch.objects.filter(pk=batch.pk).update(heartbeat_at=now)
    snapshot_ids = _snapshot_ids(items)
    # Each page a microsecond after the one before: listed in the order checked.
    stamp = PageResult.objects.stamp_after_latest(check, now)
    results = PageResult.objects.bulk_create(
        [
            _page_result(check, item, snapshot_id, stamp + n * _MICROSECOND)
            for n, (item, snapshot_id) in enumerate(
                zip(items, snapshot_ids, strict=True)
            )
        ]
    )
    _move_baselines(check.monitor_id, items, snapshot_ids, now)
    _remember_search_results(check.monitor_id, items)
    _link_captures(items, results)
    for page in results:
        notify.on_page_result(page)
    return results


def _link_captures(items: Sequence[Item], results: Sequence[PageResult]) -> None:
    """Store the pages' screenshots and PDFs (once per content) and tie them
    to their results, which keeps them from retention's purge."""
    shots = [shot for _, outcome, _ in items for shot in outcome.captures]
    if not shots:
        return
    ids = Capture.store_many(shots)
    through = PageResult.captures.through
    links = {
        (page.pk, ids[shot.digest])
        for (_, outcome, _), page in zip(items, results, strict=True)
        for shot in outcome.captures
    }
    through.objects.bulk_create(
        [through(pageresult_id=page, capture_id=capture) for page, capture in links]
    )


def _page_result(
    check: Check, item: Item, snapshot_id: int | None, stamp: datetime
) -> PageResult:
    job, outcome, state = item
    baseline = state.snapshot_id if state is not None else None
    current = snapshot_id
    if current is None and outcome.cache_hit:
        current = baseline  # a hit *is* the baseline
    # A page reported removed has no baseline any more (its next good fetch is
    # new), so while it stays gone nothing comes before it.
    nothing_before = outcome.status == PageResult.Status.NEW or outcome.is_still_gone
    page = PageResult(
        check_run=check,
        target_id=job.target_id,
        url=job.url,
        status=outcome.status,
        previous_scrape_id=None if nothing_before or state is None else state.scrape_id,
        current_scrape_id=job.scrape_id,
        previous_snapshot_id=None if nothing_before else baseline,
        current_snapshot_id=current,
        status_code=outcome.status_code,
        error=outcome.error,
        error_kind=outcome.error_kind,
        metadata=outcome.metadata,
        judgment=outcome.judged.judgment,
        verdict=outcome.judged.verdict,
        extraction=outcome.judged.extraction,
        summary=outcome.judged.summary,
        created_at=stamp,
    )
    page.set_diff(outcome.diff, outcome.diff_reference)
    return page


def _snapshot_ids(items: Sequence[Item]) -> list[int | None]:
    """Each item's stored snapshot id (None when it has no content)."""
    known: dict[str, int] = {}
    for _job, outcome, state in items:
        pack = outcome.snapshot
        if (
            pack is not None
            and state is not None
            and state.snapshot_id is not None
            and getattr(state, "snapshot_hash", None) == pack[0]
        ):
            known[pack[0]] = state.snapshot_id  # the baseline's own content
    packs = [outcome.snapshot for _, outcome, _ in items]
    missing = [p for p in packs if p is not None and p[0] not in known]
    known |= Snapshot.store_many(p for p in missing if p[1])
    # Empty bytes: content stored already (another page's baseline, say).
    known |= Snapshot.ids(p[0] for p in missing if not p[1] and p[0] not in known)
    return [known.get(p[0]) if p is not None else None for p in packs]


def _remembered_fetcher(job: PageJob, outcome: Outcome, state: PageState | None) -> str:
    """What the next check should fetch this page with: the browser once a
    plain fetch found it built by scripts; options that need a browser say
    nothing about the page itself, so they leave the memory as it was."""
    if outcome.fetcher is not None:
        return outcome.fetcher
    if job.browser in (Via.DETECTED, Via.REMEMBERED):
        return "browser"
    # Nothing learnt about the page: its options or its monitor chose.
    if job.browser in (Via.OPTIONS, Via.MONITOR) or job.fetch_with == "http":
        return state.fetcher if state is not None else ""
    return "http"


def _move_baselines(
    monitor_id: uuid.UUID,
    items: Sequence[Item],
    snapshot_ids: Sequence[int | None],
    now: datetime,
) -> None:
    """Removed pages are marked; pages with content become the baseline (one
    upsert for all); errors keep the baseline; cache hits are it. A page still
    gone has no content (no snapshot): its state stays removed, keeping the
    hash of the site's "not found" page it shows when that is new."""
    upserts: dict[tuple[uuid.UUID, str], PageState] = {}
    for (job, outcome, state), snapshot_id in zip(items, snapshot_ids, strict=True):
        url_hash = PageState.hash_url(job.url)
        page_state = PageState.objects.filter(
            monitor_id=monitor_id, target_id=job.target_id, url_hash=url_hash
        )
        if outcome.status == PageResult.Status.REMOVED:
            page_state.update(
                presence=PageState.Presence.REMOVED,
                not_found_hash=outcome.not_found_hash,
                updated_at=now,
            )
            continue
        if (
            outcome.not_found_hash
            and state is not None
            and state.not_found_hash != outcome.not_found_hash
        ):
            page_state.update(not_found_hash=outcome.not_found_hash, updated_at=now)
        content = outcome.content
        if snapshot_id is None or content is None or outcome.cache_hit:
            continue
        if outcome.search is not None:
            continue  # a search result's baseline is its SearchResultState
        cache = job.options.get("storeInCache") is not False
        derived = outcome.judged.derived
        if derived is None:
            derived = state.derived if state is not None else {}
        stored_metadata = {
            k: v for k, v in outcome.metadata.items() if k not in PER_CHECK_METADATA
        }
        # Keyed by page: a URL listed twice in a batch keeps its last result.
        upserts[(job.target_id, url_hash)] = PageState(
            monitor_id=monitor_id,
            target_id=job.target_id,
            url=job.url,
            url_hash=url_hash,
            snapshot_id=snapshot_id,
            normalized_hash=content.normalized_hash,
            scrape_id=job.scrape_id,
            presence=PageState.Presence.ACTIVE,
            fetched_at=now,
            cached_at=now if cache else None,
            metadata=stored_metadata,
            body_hash=content.body_hash,
            options_hash=options_hash(job.options),
            etag=content.etag,
            last_modified=content.last_modified,
            derived=derived,
            fetcher=_remembered_fetcher(job, outcome, state),
        )
    if upserts:
        PageState.upsert(list(upserts.values()))


def _remember_search_results(monitor_id: uuid.UUID, items: Sequence[Item]) -> None:
    """The search results' states (checks.search.stage), with their pages: a
    result that alerted is remembered in the same commit, so it alerts once."""
    states = {
        (outcome.search["target_id"], outcome.search["key"]): SearchResultState(
            monitor_id=monitor_id, **outcome.search
        )
        for _job, outcome, _state in items
        if outcome.search is not None
    }
    if states:
        SearchResultState.upsert(list(states.values()))
