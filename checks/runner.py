"""Run one check: fetch every page of a monitor's scrape targets, compare each with
its baseline (PageState), record one PageResult per page, then finish the check.

Lifecycle (all transitions are conditional updates, so two workers, a redelivered
message and the stale sweeper can race without double work):

    queued --claim()--> running --finish()--> completed | partial
                           |  \\--fail()----> failed  (crash, time limit, sweeper)
                           \\--reserve()----> skipped_no_credits

Pages are fetched concurrently by checks.fetch in a background thread with its own
event loop. The CPU work per page (HTML to Markdown, normalise + hash, and for a
changed page the diff and its HTML) runs in a small process pool
(checks.analysis, CHECK_CPU_WORKERS processes; inline when 0 or 1), while this
(the worker's) thread writes the results that are ready, several pages per
transaction: database work stays on one thread, at most a bounded number of
bodies is held in memory, and every transaction doubles as a heartbeat.

Status rules per page (reference §10.2):
* first good fetch, or good again after `removed` -> new
* same normalised content hash as the baseline   -> same
* otherwise                                       -> changed (+ unified diff, AST
  and the dashboard's side-by-side HTML)
* 404/410 while the baseline is present           -> removed (presence removed)
* fetch or extraction failure, any other 4xx/5xx  -> error; the baseline is kept,
  so the next good fetch diffs against the last good content.

Only scrape targets run in this version. Crawl and search targets are recorded in
targetResults with `"skipped": true` and a reason, produce no page results and do
not make the check partial or failed: the check reports on what it could check,
and a monitor mixing target types keeps working for its scrape pages.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import Case, F, Q, Sum, When
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce
from django.utils import timezone

from checks import affinity, analysis, notify
from checks.bulk import insert_rows
from checks.content import Pack
from checks.errors import ErrorKind, kind_of_status
from checks.fetch import FetchError, FetchResult, OutboundClient, Resolver
from checks.models import Check, PageResult, PageState, Snapshot
from monitors.models import Monitor, Target, Team

logger = logging.getLogger(__name__)

# A running check writes heartbeat_at at least this often while alive.
HEARTBEAT_SECONDS = 10.0
# A redelivered task may take over a running check only when its heartbeat is
# this old: the worker that had it is certainly gone (6 missed heartbeats).
RECLAIM_AFTER = timedelta(seconds=60)
# Deliveries of one check's task before it is given up as failed.
MAX_ATTEMPTS = 3
# scrapeOptions.timeout (ms) is honoured within these bounds (seconds).
MIN_PAGE_TIMEOUT, MAX_PAGE_TIMEOUT = 1.0, 300.0
REMOVED_STATUSES = frozenset({404, 410})
# Formats extract() produces; anything else needs a browser or an LLM.
APPLIED_FORMATS = frozenset(
    {"markdown", "html", "rawHtml", "links", "images", "changeTracking"}
)
MOBILE_USER_AGENT_PREFIX = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) Mobile/15E148"
)

SUMMARY_KEYS = ("totalPages", "same", "changed", "new", "removed", "error")


def empty_summary() -> dict[str, int]:
    return dict.fromkeys(SUMMARY_KEYS, 0)


class CheckAbandoned(Exception):
    """The check stopped being ours (failed by the sweeper, deleted) mid-run."""


# --- Deliveries, claiming and billing --------------------------------------------


def begin_delivery(check_id: str | uuid.UUID) -> Check | None:
    """Count one delivery of the check's task; None when there is nothing to do.

    The counter lives in the database, so a check whose task keeps killing its
    worker (a poison page) is failed after MAX_ATTEMPTS instead of looping.
    """
    updated = Check.objects.filter(pk=check_id, status__in=Check.IN_FLIGHT).update(
        attempts=F("attempts") + 1
    )
    if not updated:
        return None  # gone, or already finished
    check = Check.objects.select_related("monitor__team").get(pk=check_id)
    if check.attempts > MAX_ATTEMPTS:
        fail(
            check.pk,
            f"Monitor check was given up after {MAX_ATTEMPTS} attempts.",
        )
        return None
    return check


def claim(check: Check, now: datetime | None = None) -> bool:
    """Make the check ours: queued -> running, or take over a running check
    whose worker stopped heart-beating. False when someone else has it, or when
    the team's credits do not cover it (then it ends as skipped_no_credits)."""
    now = now or timezone.now()
    with transaction.atomic():
        updated = (
            Check.objects.filter(pk=check.pk)
            .filter(
                Q(status=Check.Status.QUEUED)
                | Q(status=Check.Status.RUNNING, heartbeat_at__lt=now - RECLAIM_AFTER)
            )
            .update(
                status=Check.Status.RUNNING,
                started_at=Coalesce("started_at", now),
                heartbeat_at=now,
                updated_at=now,
            )
        )
        if not updated:
            return False
        # With its monitor and team, which the run needs next.
        check.refresh_from_db(
            from_queryset=Check.objects.select_related("monitor__team")
        )
        if check.billing_status == Check.Billing.RESERVED:
            return True  # taken over: credits were reserved on the first claim
        return _reserve_credits(check, now)


def is_busy(check: Check, now: datetime | None = None) -> bool:
    """Running with a fresh heartbeat: another worker is (or was just) on it."""
    now = now or timezone.now()
    check.refresh_from_db(fields=["status", "heartbeat_at"])
    return (
        check.status == Check.Status.RUNNING
        and check.heartbeat_at is not None
        and check.heartbeat_at >= now - RECLAIM_AFTER
    )


def month_start(now: datetime) -> datetime:
    return now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def credits_used_this_month(team: Team, now: datetime) -> int:
    """Credits a team has used in the current UTC calendar month: actualCredits of
    checks finished this month, plus credits still reserved by running checks."""
    checks = Check.objects.filter(monitor__team=team)
    spent = checks.filter(finished_at__gte=month_start(now)).aggregate(
        total=Sum("actual_credits")
    )["total"]
    held = checks.filter(billing_status=Check.Billing.RESERVED).aggregate(
        total=Sum("reserved_credits")
    )["total"]
    return (spent or 0) + (held or 0)


def _reserve_credits(check: Check, now: datetime) -> bool:
    """Hold the check's estimated credits when the team has an allowance.

    The team row is locked so two checks of one team cannot both take the last
    credits (on SQLite, the IMMEDIATE transaction serialises writers anyway).
    """
    if check.monitor.team.credit_allowance is None:
        return True  # unlimited: billing_status stays not_applicable
    team = Team.objects.select_for_update().get(pk=check.monitor.team_id)
    if team.credit_allowance is None:  # lifted meanwhile
        return True
    remaining = team.credit_allowance - credits_used_this_month(team, now)
    if check.estimated_credits > remaining:
        Check.objects.filter(pk=check.pk).update(
            status=Check.Status.SKIPPED_NO_CREDITS,
            finished_at=now,
            error="Monitor check skipped: insufficient credits.",
            actual_credits=0,
            summary=empty_summary(),
            updated_at=now,
        )
        _after_finish(check.pk, now, summary=None)
        return False
    Check.objects.filter(pk=check.pk).update(
        reserved_credits=check.estimated_credits,
        billing_status=Check.Billing.RESERVED,
    )
    check.reserved_credits = check.estimated_credits
    check.billing_status = Check.Billing.RESERVED
    return True


# --- Running -----------------------------------------------------------------------


def run(check: Check, *, resolver: Resolver | None = None) -> Check:
    """Claim and run a check to its end; returns it as stored afterwards.

    Never raises for page problems (they are page results) nor for a crash of
    the run itself (the check is failed with a reason and the crash logged).
    """
    if claim(check):
        execute(check, resolver=resolver)
    check.refresh_from_db()
    return check


def execute(check: Check, *, resolver: Resolver | None = None) -> None:
    """Fetch, compare and record every page of a claimed (running) check."""
    try:
        _execute(check, resolver)
    except CheckAbandoned:
        logger.info("Check %s was ended elsewhere while running", check.pk)
    except SoftTimeLimitExceeded:
        fail(check.pk, "Monitor check exceeded its time limit and was stopped.")
    except Exception:
        logger.exception("Check %s crashed", check.pk)
        fail(check.pk, "Monitor check failed because of an internal error.")


def _execute(check: Check, resolver: Resolver | None) -> None:
    if Check.monitor.is_cached(check):
        monitor = check.monitor  # claim() read it, in the transaction just committed
    else:
        monitor = Monitor.objects.select_related("team").get(pk=check.monitor_id)
    if monitor.deleted_at is not None:
        fail(check.pk, "Monitor was deleted before the check finished.")
        return
    targets = list(monitor.targets.order_by("position", "created_at"))
    jobs, target_results = plan(check, targets)
    # Pages an earlier worker recorded before it died (a taken-over check):
    # each was counted in pages_done in the transaction that wrote it.
    done = (
        set(PageResult.objects.filter(check_run=check).values_list("target_id", "url"))
        if check.pages_done
        else set()
    )
    todo = [job for job in jobs if (job.target_id, job.url) not in done]
    # snapshot_hash: a page whose content did not change reuses its baseline's
    # snapshot without sending the blob to the database again.
    states = {
        (state.target_id, state.url_hash): state
        for state in PageState.objects.filter(monitor=monitor).annotate(
            snapshot_hash=F("snapshot__content_hash")
        )
    }
    now = timezone.now()
    to_fetch = []
    cached: list[tuple[PageJob, Outcome, PageState | None]] = []
    for job in todo:
        state = states.get((job.target_id, PageState.hash_url(job.url)))
        outcome = from_cache(job, state, now)
        if outcome is None:
            to_fetch.append(job)
        else:
            cached.append((job, outcome, state))
    if not to_fetch:
        with relaxed_durability():
            _begin(check, len(jobs), todo, target_results, cached)
    else:
        # The pool starts (or is found running) before the fetcher's thread,
        # and the first pages are on their way while the progress is written.
        executor = analysis.pool(int(settings.CHECK_CPU_WORKERS))
        pipeline = _Pipeline(check, states, executor)
        fetcher = Fetcher(
            to_fetch,
            resolver=resolver,
            prepare=pipeline.prepare,
            wakes=pipeline.wakes,
        )
        # Only with a pool, and after it has started: its processes must stay
        # free to use every CPU (checks.affinity).
        one_cpu = affinity.threads_on_one_cpu(
            settings.CHECK_THREADS_ON_ONE_CPU and executor is not None
        )
        with one_cpu, fetcher, relaxed_durability():
            _begin(check, len(jobs), todo, target_results, cached)
            pipeline.run(fetcher)
    finish(check.pk)


def _begin(
    check: Check,
    total: int,
    todo: Sequence[PageJob],
    target_results: list[dict],
    cached: Sequence[tuple[PageJob, Outcome, PageState | None]],
) -> None:
    """Write the check's progress (without waiting for the WAL flush: see
    relaxed_durability) and the pages the cache answered."""
    updated = Check.objects.filter(pk=check.pk, status=Check.Status.RUNNING).update(
        pages_total=total, pages_done=total - len(todo), target_results=target_results
    )
    if not updated:
        raise CheckAbandoned
    for start in range(0, len(cached), RECORD_BATCH):
        record_many(check, cached[start : start + RECORD_BATCH])


def heartbeat(check_id: uuid.UUID) -> None:
    now = timezone.now()
    alive = Check.objects.filter(pk=check_id, status=Check.Status.RUNNING).update(
        heartbeat_at=now, updated_at=now
    )
    if not alive:
        raise CheckAbandoned


@dataclass
class _Page:
    """A fetched page whose analysis (then maybe reconcile) runs in the pool."""

    job: PageJob
    state: PageState | None
    request: Analysis
    future: Future[Any]
    # Set once analysed when the source differs from the baseline's; `future`
    # is then the reconcile() that decides between same and changed.
    outcome: Outcome | None = None


def _run_inline(function: Callable[..., Any], *args: Any) -> Future[Any]:
    future: Future[Any] = Future()
    try:
        future.set_result(function(*args))
    except Exception as exc:
        future.set_exception(exc)
    return future


class _Pipeline:
    """The worker thread's loop: take fetched pages, have them analysed (in the
    process pool, or inline), and record what is ready, several pages per
    transaction, while the pool works on the next ones.

    With a pool, the fetcher's thread hands each page to it as soon as it is
    fetched (prepare()), so the pool keeps working while this thread waits for
    the database. The bodies held stay bounded: at most `limit` pages are taken
    from the fetcher's bounded queue before their results are recorded, and
    fetches wait (in their slots) while that queue is full.
    """

    def __init__(
        self,
        check: Check,
        states: Mapping[tuple[uuid.UUID, str], PageState],
        executor: Executor | None,
    ) -> None:
        self.check = check
        self.states = states
        self.executor = executor
        # With a pool: enough pages taken ahead that the fetcher rarely waits
        # while this thread writes, and still a bound.
        self.limit = (
            RECORD_BATCH
            if executor is None
            else 2 * int(getattr(executor, "_max_workers", 2))
            + int(settings.FETCH_CONCURRENCY)
        )
        self.wake = threading.Event()
        self.fetcher: Fetcher | None = None
        self.waiting: list[_Page] = []
        self.ready: list[tuple[PageJob, Outcome, PageState | None]] = []

    def submit(self, function: Callable[..., Any], *args: Any) -> Future[Any]:
        if self.executor is None:
            return _run_inline(function, *args)
        future = self.executor.submit(function, *args)
        future.add_done_callback(self._wake_up)
        return future

    def _wake_up(self, _future: Future[Any]) -> None:
        self.wake.set()

    def prepare(
        self, job: PageJob, fetched: FetchResult | BaseException
    ) -> tuple[PageJob, PageState | None, Outcome | Analysis | _Page]:
        """Run by the fetcher's thread for each fetched page: decide what can
        be decided without extracting, and send the rest to the pool."""
        state = self.states.get((job.target_id, PageState.hash_url(job.url)))
        first = compare(job, fetched, state)
        if isinstance(first, Outcome) or self.executor is None:
            return job, state, first
        try:
            future = self.submit(analysis.analyse, *first.args)
        except Exception:  # a broken pool: the worker thread analyses it inline
            logger.warning("Could not hand %s to the analysis pool", job.url)
            return job, state, first
        return job, state, _Page(job, state, first, future)

    @staticmethod
    def wakes(item: tuple[PageJob, PageState | None, Any]) -> bool:
        """Whether a page the fetcher hands over needs this thread now. One
        still being analysed in the pool does not: the analysis wakes it when
        done, and waking for both would double this thread's rounds. Asked
        after the page is queued, so an analysis that finished (and woke this
        thread) before the page was there still gets it taken."""
        page = item[2]
        return not isinstance(page, _Page) or page.future.done()

    def run(self, fetcher: Fetcher) -> None:
        self.fetcher = fetcher
        self.wake = fetcher.wake  # set by the fetcher and by finished analyses
        remaining = fetcher.count
        ready_since = 0.0
        try:
            while remaining:
                self.wake.clear()
                took = self._take(fetcher)
                self._collect()
                if self.ready and not ready_since:
                    ready_since = time.monotonic()
                # While the pool is still busy with pages, results that are
                # ready wait up to RECORD_LINGER_SECONDS to share a transaction.
                linger = (
                    ready_since + RECORD_LINGER_SECONDS - time.monotonic()
                    if self.ready and self.waiting and len(self.ready) < RECORD_BATCH
                    else 0.0
                )
                if self.ready and linger <= 0:
                    batch = self.ready[:RECORD_BATCH]
                    del self.ready[:RECORD_BATCH]
                    ready_since = time.monotonic() if self.ready else 0.0
                    record_many(self.check, batch)
                    remaining -= len(batch)
                elif took:
                    continue
                elif self.ready:
                    self.wake.wait(linger)
                elif not self.wake.wait(HEARTBEAT_SECONDS):
                    if not self.waiting:
                        fetcher.raise_if_stopped()
                    heartbeat(self.check.pk)
        except BaseException:
            self._abandon()
            raise

    def _take(self, fetcher: Fetcher) -> bool:
        took = False
        # Taking no more than `limit` keeps the fetcher's queue full when the
        # pool falls behind, so the fetcher waits: bodies held stay bounded.
        while len(self.waiting) < self.limit and len(self.ready) < RECORD_BATCH:
            item = fetcher.take()
            if item is None:
                break
            took = True
            job, state, prepared = item
            if isinstance(prepared, Outcome):
                self.ready.append((job, prepared, state))
            elif isinstance(prepared, Analysis):
                future = _run_inline(analysis.analyse, *prepared.args)
                self.waiting.append(_Page(job, state, prepared, future))
            else:
                self.waiting.append(prepared)
        return took

    def _collect(self) -> None:
        if not any(page.future.done() for page in self.waiting):
            return
        waiting, self.waiting = self.waiting, []
        differing: list[_Page] = []
        for page in waiting:
            if not page.future.done():
                self.waiting.append(page)
            elif page.outcome is None:
                outcome = conclude(page.request, page.future.result())
                if outcome.source is not None:
                    page.outcome = outcome
                    differing.append(page)
                else:
                    self.ready.append((page.job, outcome, page.state))
            else:
                reconciled(page.outcome, page.state, page.future.result())
                self.ready.append((page.job, page.outcome, page.state))
        if differing:
            previous = Snapshot.packed(
                page.state.snapshot_id for page in differing if page.state
            )
            for page in differing:
                assert page.state is not None and page.outcome is not None
                data, previous_format = previous[page.state.snapshot_id]
                source_format, source = page.outcome.source  # type: ignore[misc]
                page.future = self.submit(
                    analysis.reconcile,
                    data, previous_format, source, source_format,
                    page.state.normalized_hash,
                )  # fmt: skip
                self.waiting.append(page)
            self._collect()  # inline reconciles are done already

    def _abandon(self) -> None:
        """Leaving early: drop queued analyses; a pool still busy with one of
        ours (a slow page, a time limit) is replaced, not waited for."""
        busy = False
        pages = list(self.waiting)
        while self.fetcher is not None and (item := self.fetcher.take()) is not None:
            if isinstance(item[2], _Page):  # already handed to the pool
                pages.append(item[2])
        for page in pages:
            if not page.future.cancel() and not page.future.done():
                busy = True
        if busy and self.executor is not None:
            analysis.reset()


# --- What to fetch --------------------------------------------------------------


@dataclass(frozen=True)
class PageJob:
    """One URL of one scrape target in one check."""

    target_id: uuid.UUID
    url: str
    options: Mapping[str, Any]
    credits: int
    scrape_id: uuid.UUID

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


def plan(check: Check, targets: Sequence[Target]) -> tuple[list[PageJob], list[dict]]:
    """The pages to check and the check's targetResults.

    Scrape ids are kept in targetResults.expectedJobs, so a check taken over
    after a lost worker reuses them and its pages stay consistent.
    """
    stored = {r.get("targetId"): r for r in check.target_results or []}
    jobs: list[PageJob] = []
    results: list[dict] = []
    for target in targets:
        if not target.is_checked:
            results.append(
                {
                    "targetId": str(target.id),
                    "type": target.type,
                    "skipped": True,
                    "reason": (
                        f"{target.type.capitalize()} targets are not supported yet;"
                        " this target was skipped."
                    ),
                }
            )
            continue
        ids = stored.get(str(target.id), {}).get("expectedJobs") or []
        if len(ids) != len(target.urls):
            ids = [str(uuid.uuid4()) for _ in target.urls]
        credits = target.credits_per_page()
        options = target.scrape_options or {}
        jobs.extend(
            PageJob(target.id, url, options, credits, uuid.UUID(scrape_id))
            for url, scrape_id in zip(target.urls, ids, strict=True)
        )
        results.append(
            {"targetId": str(target.id), "type": "scrape", "expectedJobs": ids}
        )
    return jobs, results


def not_applied(options: Mapping[str, Any]) -> list[str]:
    """scrapeOptions this fetcher cannot honour (they need a browser or an LLM)."""
    skipped = []
    if options.get("waitFor"):
        skipped.append("waitFor")
    if options.get("actions"):
        skipped.append("actions")
    formats = options.get("formats")
    for fmt in formats if isinstance(formats, list) else []:
        name = fmt.get("type") if isinstance(fmt, dict) else fmt
        if not isinstance(name, str):
            continue
        if name not in APPLIED_FORMATS:
            skipped.append(f"formats.{name}")
        elif name == "changeTracking" and "json" in (fmt.get("modes") or []):
            skipped.append("formats.changeTracking.json")
    if options.get("location"):
        skipped.append("location")
    if options.get("proxy") in ("stealth", "enhanced"):
        skipped.append("proxy")
    return list(dict.fromkeys(skipped))


# --- Deciding a page's status ------------------------------------------------------


@dataclass
class Outcome:
    """A page's result, decided outside any transaction."""

    status: str
    metadata: dict[str, Any]
    status_code: int | None = None
    error: str | None = None
    error_kind: str = ""  # an ErrorKind whenever `error` is set
    # Hash of the normalised Markdown, when it was computed ("" otherwise).
    normalized_hash: str = ""
    diff: dict[str, Any] | None = None
    diff_html: str = ""
    cache_hit: bool = False
    # (content hash, compressed data, size, format) of the page's snapshot,
    # packed off-thread; empty data when it is the baseline's own snapshot.
    snapshot: Pack | None = None
    # (format, text) of a source that differs from the baseline's, until
    # analysis.reconcile() has decided between same and changed.
    source: tuple[str, str] | None = None


def _base_metadata(job: PageJob) -> dict[str, Any]:
    metadata: dict[str, Any] = {"sourceURL": job.url, "creditsUsed": 0}
    skipped = not_applied(job.options)
    if skipped:
        metadata["notApplied"] = skipped
    return metadata


def _cacheable(state: PageState | None) -> bool:
    return (
        state is not None
        and state.presence == PageState.Presence.ACTIVE
        and state.snapshot_id is not None
        and state.cached_at is not None
    )


def _milliseconds(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def from_cache(job: PageJob, state: PageState | None, now: datetime) -> Outcome | None:
    """Serve the page from its last good fetch when maxAge/minAge allow it.

    Monitors default to maxAge 0 (always fetch). With minAge, only the cache
    may answer (as in Firecrawl); no old-enough copy is a page error.
    """
    max_age = _milliseconds(job.options.get("maxAge")) or 0
    min_age = _milliseconds(job.options.get("minAge"))
    age_ms = (
        (now - state.cached_at).total_seconds() * 1000
        if state is not None and _cacheable(state) and state.cached_at
        else None
    )
    if min_age is not None and min_age > 0:
        if age_ms is None or age_ms < min_age:
            return Outcome(
                PageResult.Status.ERROR,
                _base_metadata(job),
                error=(
                    f"No cached copy at least {min_age} ms old is available "
                    "(minAge), so the page was not fetched."
                ),
                error_kind=ErrorKind.NOT_CACHED,
            )
    elif age_ms is None or age_ms > max_age:
        return None
    assert state is not None and state.cached_at is not None
    metadata = {**state.metadata, **_base_metadata(job)}
    metadata |= {
        "creditsUsed": job.credits,
        "cacheState": "hit",
        "cachedAt": state.cached_at.isoformat().replace("+00:00", "Z"),
    }
    return Outcome(
        PageResult.Status.SAME,
        metadata,
        status_code=metadata.get("statusCode"),
        cache_hit=True,
    )


@dataclass
class Analysis:
    """A fetched page that needs extracting: analysis.analyse(*args) decides it."""

    job: PageJob
    state: PageState | None
    metadata: dict[str, Any]
    status_code: int
    args: tuple[Any, ...]


def compare(
    job: PageJob, fetched: FetchResult | BaseException, state: PageState | None
) -> Outcome | Analysis:
    """Decide a fetched page's status against its baseline, as far as it can be
    without extracting the body (fetch errors, removed pages, HTTP errors);
    otherwise the page's Analysis, to run in the pool and finish with conclude()."""
    metadata = _base_metadata(job)
    if isinstance(fetched, FetchError):
        return Outcome(
            PageResult.Status.ERROR,
            metadata,
            error=fetched.message,
            error_kind=fetched.kind,
        )
    if isinstance(fetched, BaseException):
        logger.error("Fetching %s crashed", job.url, exc_info=fetched)
        return Outcome(
            PageResult.Status.ERROR,
            metadata,
            error="The page could not be fetched because of an internal error.",
            error_kind=ErrorKind.INTERNAL,
        )
    content_type = fetched.headers.get("content-type", "")
    code = fetched.status_code
    metadata |= {"url": fetched.final_url, "statusCode": code}
    if content_type:
        metadata["contentType"] = content_type
    has_baseline = _has_baseline(state)
    if code in REMOVED_STATUSES and has_baseline:
        return Outcome(PageResult.Status.REMOVED, metadata, status_code=code)
    if code >= 400:
        return Outcome(
            PageResult.Status.ERROR,
            metadata,
            status_code=code,
            error=f"The page answered HTTP {code}.",
            error_kind=kind_of_status(code) or "",
        )
    # snapshot_hash is annotated on the states a check loads (_execute).
    baseline = getattr(state, "snapshot_hash", None) if has_baseline else None
    args = (
        fetched.content, content_type, fetched.final_url, dict(job.options), baseline,
    )  # fmt: skip
    return Analysis(job, state, metadata, code, args)


def conclude(request: Analysis, result: Mapping[str, Any]) -> Outcome:
    """The page's outcome from analysis.analyse()'s result: new (no baseline),
    same (the baseline's very source), or still open when the source differs
    (`outcome.source` set: analysis.reconcile() decides, see reconciled())."""
    job, metadata, code = request.job, request.metadata, request.status_code
    if "error" in result:
        return Outcome(
            PageResult.Status.ERROR,
            metadata,
            status_code=code,
            error=result["error"],
            error_kind=ErrorKind.UNREADABLE,
        )
    page_metadata = dict(result["metadata"])
    page_metadata.setdefault("title", None)
    metadata = page_metadata | metadata | {"creditsUsed": job.credits}
    outcome = Outcome(
        PageResult.Status.NEW,
        metadata,
        status_code=code,
        snapshot=result["snapshot"],
        source=result["source"],
    )
    state = request.state
    if _has_baseline(state):
        assert state is not None
        outcome.status = PageResult.Status.SAME  # unless reconcile() says changed
        outcome.normalized_hash = state.normalized_hash
    return outcome


def reconciled(
    outcome: Outcome, state: PageState | None, result: Mapping[str, Any]
) -> None:
    """Complete `outcome` with analysis.reconcile()'s verdict on its source."""
    assert state is not None
    outcome.source = None
    if "error" in result:
        outcome.status, outcome.error = PageResult.Status.ERROR, result["error"]
        outcome.error_kind = ErrorKind.UNREADABLE
        return
    outcome.normalized_hash = result["hash"]
    if result["status"] == "changed":
        outcome.status = PageResult.Status.CHANGED
        outcome.diff, outcome.diff_html = result["diff"], result["diff_html"]
    # A same page keeps its baseline's snapshot unless reconcile() replaced it.
    outcome.snapshot = result["snapshot"] or (
        getattr(state, "snapshot_hash", ""),
        b"",
        0,
        "",
    )


def _has_baseline(state: PageState | None) -> bool:
    return (
        state is not None
        and state.presence == PageState.Presence.ACTIVE
        and state.snapshot_id is not None
    )


# --- Recording ------------------------------------------------------------------

# Pages recorded per transaction, at most: as many as are ready at once.
RECORD_BATCH = 10
# How long a ready result may wait for others (still being analysed) to share
# its transaction: fewer, larger transactions cost the worker less CPU.
RECORD_LINGER_SECONDS = 0.03


def record(
    check: Check, job: PageJob, outcome: Outcome, state: PageState | None
) -> PageResult:
    """Write one page result, move the baseline, announce it: one transaction."""
    return record_many(check, [(job, outcome, state)])[0]


def record_many(
    check: Check, items: Sequence[tuple[PageJob, Outcome, PageState | None]]
) -> list[PageResult]:
    """Write several pages' results, baselines and notifications in one
    transaction (each page's notification with its page, as before).

    Within relaxed_durability() (how _execute records pages) the transaction
    commits on PostgreSQL with synchronous_commit off: COMMIT does not wait for
    the WAL flush. A database crash can then lose the last few hundred
    milliseconds of page results, never half of one (the database stays
    consistent); the check is not finished yet, so its redelivered task or the
    stale sweeper takes it over and the lost pages are fetched again. finish(),
    fail() and the credit reservation keep durable commits, and a durable
    commit also flushes every earlier one.

    Retried once on an integrity error: retention may delete an orphan snapshot
    in the instant between Snapshot.store_many() finding it and the commit.
    """
    for attempt in (1, 2):
        try:
            with transaction.atomic():
                return _record_many(check, items)
        except IntegrityError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


@contextlib.contextmanager
def relaxed_durability() -> Iterator[None]:
    """Commits inside do not wait for the WAL flush (PostgreSQL; see
    record_many). Set once for the session rather than per transaction, which
    saves a round trip per batch of pages; reset on the way out, before
    finish() or fail() commit."""
    connection = transaction.get_connection()
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        yield  # inside a transaction (tests): a session setting would outlive it
        return
    with connection.cursor() as cursor:
        cursor.execute("SET synchronous_commit TO OFF")
    try:
        yield
    finally:
        try:
            with connection.cursor() as cursor:
                cursor.execute("RESET synchronous_commit")
        except DatabaseError:
            # Never leave the setting behind on a connection that later
            # commits finish() or fail(): a fresh one is opened instead.
            connection.close()


def _snapshot_ids(
    items: Sequence[tuple[PageJob, Outcome, PageState | None]],
) -> list[int | None]:
    """Each item's stored snapshot id (None when it has no new content)."""
    packs: list[Pack | None] = []
    known: dict[str, int] = {}
    for _job, outcome, state in items:
        pack = outcome.snapshot
        packs.append(pack)
        if (
            pack is not None
            and state is not None
            and state.snapshot_id is not None
            and getattr(state, "snapshot_hash", None) == pack[0]
        ):
            known[pack[0]] = state.snapshot_id  # the baseline's own content
    missing = [p for p in packs if p is not None and p[0] not in known]
    if missing:
        # Empty bytes: analyse() found the baseline's content and left the
        # compression out; that row exists (the baseline protects it).
        known |= Snapshot.store_many(p for p in missing if p[1])
        if any(not p[1] and p[0] not in known for p in missing):
            known |= Snapshot.ids(p[0] for p in missing if not p[1])
    return [known[p[0]] if p is not None else None for p in packs]


def _record_many(
    check: Check, items: Sequence[tuple[PageJob, Outcome, PageState | None]]
) -> list[PageResult]:
    now = timezone.now()
    # First, so a check the sweeper already failed gets no more pages (the
    # update also locks the check row until these pages are committed).
    alive = Check.objects.filter(pk=check.pk, status=Check.Status.RUNNING).update(
        pages_done=F("pages_done") + len(items), heartbeat_at=now, updated_at=now
    )
    if not alive:
        raise CheckAbandoned
    snapshot_ids = _snapshot_ids(items)
    pages = []
    for (job, outcome, state), snapshot_id in zip(items, snapshot_ids, strict=True):
        baseline = state.snapshot_id if state is not None else None
        if snapshot_id is not None:
            current = snapshot_id
        else:
            current = baseline if outcome.cache_hit else None  # a hit *is* the baseline
        is_new = outcome.status == PageResult.Status.NEW
        pages.append(
            PageResult(
                check_run=check,
                target_id=job.target_id,
                url=job.url,
                status=outcome.status,
                previous_scrape_id=None if is_new or state is None else state.scrape_id,
                current_scrape_id=job.scrape_id,
                previous_snapshot_id=None if is_new else baseline,
                current_snapshot_id=current,
                status_code=outcome.status_code,
                error=outcome.error,
                error_kind=outcome.error_kind,
                metadata=outcome.metadata,
                diff=outcome.diff,
                diff_html=outcome.diff_html,
            )
        )
    insert_rows(pages)
    _move_baselines(check.monitor_id, items, snapshot_ids, now)
    for page in pages:
        notify.on_page_result(page)
    return pages


def _move_baselines(
    monitor_id: uuid.UUID,
    items: Sequence[tuple[PageJob, Outcome, PageState | None]],
    snapshot_ids: Sequence[int | None],
    now: datetime,
) -> None:
    """Removed pages are marked; pages with new content become the baseline
    (one upsert for all); errors keep the baseline; cache hits are it."""
    upserts: dict[tuple[uuid.UUID, str], PageState] = {}
    for (job, outcome, _state), snapshot_id in zip(items, snapshot_ids, strict=True):
        url_hash = PageState.hash_url(job.url)
        if outcome.status == PageResult.Status.REMOVED:
            PageState.objects.filter(
                monitor_id=monitor_id, target_id=job.target_id, url_hash=url_hash
            ).update(presence=PageState.Presence.REMOVED, updated_at=now)
            continue
        if snapshot_id is None:
            continue
        cache = job.options.get("storeInCache") is not False
        stored_metadata = {
            k: v
            for k, v in outcome.metadata.items()
            if k not in ("notApplied", "cacheState", "cachedAt", "creditsUsed")
        }
        # Keyed by page: a URL listed twice in a batch keeps its last result.
        upserts[(job.target_id, url_hash)] = PageState(
            monitor_id=monitor_id,
            target_id=job.target_id,
            url=job.url,
            url_hash=url_hash,
            snapshot_id=snapshot_id,
            normalized_hash=outcome.normalized_hash,
            scrape_id=job.scrape_id,
            presence=PageState.Presence.ACTIVE,
            fetched_at=now,
            cached_at=now if cache else None,
            metadata=stored_metadata,
        )
    if upserts:
        PageState.upsert(list(upserts.values()))


# --- Finishing ------------------------------------------------------------------


def _tally(check_id: uuid.UUID) -> list[tuple[str, Any]]:
    """(status, creditsUsed) of each page result of a check: what its summary
    and its credits are computed from, in one query that leaves the rest of
    each page's metadata in the database."""
    return list(
        PageResult.objects.filter(check_run_id=check_id).values_list(
            "status", KT("metadata__creditsUsed")
        )
    )


def summarize(
    check_id: uuid.UUID, tally: list[tuple[str, Any]] | None = None
) -> dict[str, int]:
    if tally is None:
        tally = _tally(check_id)
    counts = Counter(status for status, _ in tally)
    summary = empty_summary()
    for status, count in counts.items():
        summary[status] = count
    summary["totalPages"] = sum(counts.values())
    return summary


def actual_credits(
    check: Check, now: datetime, tally: list[tuple[str, Any]] | None = None
) -> int:
    """Sum of the pages' creditsUsed; removed pages are free, and so are same
    pages when the monitor's interval qualifies (unchangedPagesFree)."""
    monitor = check.monitor
    same_free = monitor.deleted_at is None and monitor.unchanged_pages_free(now)
    total = 0
    if tally is None:
        tally = _tally(check.pk)
    for status, credits in tally:
        if status == PageResult.Status.REMOVED:
            continue
        if status == PageResult.Status.SAME and same_free:
            continue
        # PostgreSQL hands the JSON number over as text, SQLite as a number.
        if isinstance(credits, str):
            credits = int(credits) if credits.isdigit() else None
        total += credits if isinstance(credits, int) else 0
    return total


def finish(check_id: uuid.UUID) -> Check | None:
    """running -> completed | partial, with summary, credits and monitor fields."""
    with transaction.atomic():
        check = (
            Check.objects.select_for_update()
            .select_related("monitor")
            .filter(pk=check_id, status=Check.Status.RUNNING)
            .first()
        )
        if check is None:
            return None  # failed by the sweeper meanwhile: its word stands
        now = timezone.now()
        tally = _tally(check.pk)
        summary = summarize(check.pk, tally)
        check.summary = summary
        check.status = (
            Check.Status.PARTIAL if summary["error"] else Check.Status.COMPLETED
        )
        check.error = (
            f"{summary['error']} of {summary['totalPages']} pages could not be checked."
            if summary["error"]
            else None
        )
        check.actual_credits = actual_credits(check, now, tally)
        if check.billing_status == Check.Billing.RESERVED:
            check.billing_status = Check.Billing.CONFIRMED
        check.finished_at = now
        check.heartbeat_at = now
        # Before the save, which then writes the notification status too.
        _after_finish(check.pk, now, summary=summary, check=check, write_status=False)
        check.save(
            update_fields=[
                "summary",
                "status",
                "error",
                "actual_credits",
                "billing_status",
                "finished_at",
                "heartbeat_at",
                "notification_status",
                "updated_at",
            ]
        )
        return check


def fail(
    check_id: uuid.UUID | str,
    message: str,
    now: datetime | None = None,
    *,
    where: Q | None = None,
) -> bool:
    """End an in-flight check as failed (crash, time limit, stale, given up).

    Pages recorded so far stay and are counted; the reservation is released and
    nothing is charged. `where` narrows which checks may be failed (the sweeper
    re-states its staleness test, so a check claimed meanwhile is spared).
    False when the check was not in flight (or not matching).
    """
    now = now or timezone.now()
    with transaction.atomic():
        check = (
            Check.objects.select_for_update()
            .filter(pk=check_id, status__in=Check.IN_FLIGHT)
            .filter(where or Q())
            .first()
        )
        if check is None:
            return False
        summary = summarize(check.pk)
        check.status = Check.Status.FAILED
        check.error = message
        check.summary = summary
        check.finished_at = now
        check.actual_credits = 0
        if check.billing_status == Check.Billing.RESERVED:
            check.billing_status = Check.Billing.RELEASED
        check.save(
            update_fields=[
                "status",
                "error",
                "summary",
                "finished_at",
                "actual_credits",
                "billing_status",
                "updated_at",
            ]
        )
        _after_finish(check.pk, now, summary=summary)
    return True


# --- Lost checks --------------------------------------------------------------------

# A queued check no worker picked up within this long lost its message.
STALE_QUEUED_AFTER = timedelta(minutes=10)
STALE_SWEEP_LIMIT = 500
STALE_QUEUED_MESSAGE = (
    "Monitor check was not picked up by a worker within 10 minutes and was ended."
)
STALE_RUNNING_MESSAGE = (
    "Monitor check stopped responding (its worker was lost) and was ended."
)


def stale_running_after() -> timedelta:
    """No live worker can hold a check longer than the task's hard time limit,
    so a heartbeat older than that means the worker is gone."""
    return timedelta(seconds=int(settings.CELERY_TASK_TIME_LIMIT))


def fail_stale_checks(now: datetime) -> int:
    """Fail checks a lost worker or a lost message left in flight.

    The monitor's currentCheckId is cleared with them, and its schedule was
    never held up (dispatch advances next_run_at on its own), so the next slot
    runs normally. Returns how many checks were failed.
    """
    queued_before = now - STALE_QUEUED_AFTER
    running_before = now - stale_running_after()
    stale = list(
        Check.objects.stale(queued_before, running_before)
        .order_by("created_at")
        .values_list("pk", "status")[:STALE_SWEEP_LIMIT]
    )
    failed = 0
    for pk, status in stale:
        if status == Check.Status.QUEUED:
            where = Q(status=status, created_at__lt=queued_before)
            message = STALE_QUEUED_MESSAGE
        else:
            where = Q(status=status, heartbeat_at__lt=running_before)
            message = STALE_RUNNING_MESSAGE
        failed += fail(pk, message, now, where=where)
    return failed


def _after_finish(
    check_id: uuid.UUID,
    now: datetime,
    *,
    summary: dict[str, int] | None,
    check: Check | None = None,
    write_status: bool = True,
) -> None:
    """Monitor bookkeeping and the notification for a check that just finished.

    lastRunAt counts every finished check, skipped ones included (reference
    §6); lastCheckSummary only checks that looked at pages. currentCheckId is
    cleared only if it still points at this check. The check's notification
    status is set on `check`, and in its row unless `write_status` is False
    (the caller saves it).
    """
    if check is None:  # the caller's copy, when it has an up-to-date one
        check = Check.objects.select_related("monitor").get(pk=check_id)
    fields: dict[str, Any] = {
        "last_run_at": now,
        "current_check_id": Case(
            When(current_check_id=check.pk, then=None),
            default=F("current_check_id"),
        ),
    }
    if summary is not None:
        fields["last_check_summary"] = summary
    Monitor.objects.filter(pk=check.monitor_id).update(**fields)
    notify.on_check_finished(check, write=write_status)


# --- Fetching in the background ----------------------------------------------------


class _Gate:
    """Overall and per-host slots taken *before* calling the client, so a page
    waiting for its turn does not spend its own timeout budget queueing."""

    def __init__(self, total: int, per_host: int) -> None:
        self._total = asyncio.Semaphore(total)
        self._per_host = per_host
        self._hosts: dict[str, asyncio.Semaphore] = {}

    @contextlib.asynccontextmanager
    async def slot(self, host: str) -> Any:
        semaphore = self._hosts.setdefault(host, asyncio.Semaphore(self._per_host))
        async with semaphore, self._total:
            yield


class Fetcher:
    """Fetch jobs concurrently in a thread with its own event loop; hand each
    result to the caller's thread through a bounded queue as it completes
    (take() it; `wake` is set when one arrives).

    `prepare(job, result)`, when given, runs on the fetcher's thread and its
    return value is what take() hands over instead of (job, result); it must
    be quick and must not raise. `wakes(item)`, when given, says whether a
    hand-over sets `wake` (the caller may be woken otherwise, as the pipeline
    is by the analysis pool); it must be quick and must not raise.
    """

    def __init__(
        self,
        jobs: Sequence[PageJob],
        *,
        resolver: Resolver | None = None,
        prepare: Callable[[PageJob, FetchResult | BaseException], Any] | None = None,
        wakes: Callable[[Any], bool] | None = None,
    ):
        self._jobs = list(jobs)
        self._resolver = resolver
        self._prepare = prepare
        self._wakes = wakes
        total = int(settings.FETCH_CONCURRENCY)
        self._per_host = int(settings.FETCH_PER_HOST_CONCURRENCY)
        self._total = total
        self._results: queue.Queue[Any] = queue.Queue(maxsize=total)
        self._stop = threading.Event()
        # Set on hand-overs (see `wakes`); the caller's pipeline waits on it
        # (and sets it from the analysis pool's callbacks too).
        self.wake = threading.Event()
        self._thread = threading.Thread(
            target=self._main, name="check-fetcher", daemon=True
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._main_task: asyncio.Task[None] | None = None

    def __enter__(self) -> Fetcher:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        # Leaving early (time limit, abandoned check): cancel what is in flight
        # rather than wait for slow pages, so the caller can still record the
        # failure before the hard time limit kills the process.
        loop, task = self._loop, self._main_task
        if self._thread.is_alive() and loop is not None and task is not None:
            with contextlib.suppress(RuntimeError):  # the loop just closed
                loop.call_soon_threadsafe(task.cancel)
        self._thread.join(timeout=5)

    @property
    def count(self) -> int:
        return len(self._jobs)

    def take(self) -> Any:
        """The next fetched (job, result or error), or what `prepare` made of
        it; None when none is waiting. `wake` is set whenever one arrives."""
        try:
            return self._results.get_nowait()
        except queue.Empty:
            return None

    def raise_if_stopped(self) -> None:
        if not self._thread.is_alive() and self._results.empty():
            raise RuntimeError("The page fetcher stopped early.")

    def _main(self) -> None:
        try:
            asyncio.run(self._fetch_all())
        except asyncio.CancelledError:
            pass  # the caller left early and cancelled us
        except Exception:
            logger.exception("Page fetcher crashed")

    async def _fetch_all(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._main_task = asyncio.current_task()
        if self._stop.is_set():
            return  # the caller left before the loop started
        gate = _Gate(self._total, self._per_host)
        async with OutboundClient(
            resolver=self._resolver,
            concurrency=self._total,
            per_host_concurrency=self._per_host,
        ) as client:
            await asyncio.gather(*(self._one(client, gate, job) for job in self._jobs))

    async def _one(self, client: OutboundClient, gate: _Gate, job: PageJob) -> None:
        result: FetchResult | BaseException
        async with gate.slot(job.host):
            if self._stop.is_set():
                return
            try:
                result = await client.fetch(
                    job.url,
                    headers=job.headers,
                    timeout=job.timeout,
                    verify=job.verify_tls,
                )
            except FetchError as exc:
                result = exc
            except Exception as exc:
                result = exc
            # Handed over before the slot is let go: while the consumer is
            # behind, its queue stays full and fetches wait here, so no more
            # bodies are fetched than can be held (queue + slots).
            if self._prepare is None:
                await self._hand_over((job, result))
            else:
                await self._hand_over(self._prepare(job, result))

    async def _hand_over(self, item: Any) -> None:
        # Polling put instead of a blocking one: a blocked thread could never
        # notice that the consumer gave up (time limit, abandoned check).
        while not self._stop.is_set():
            try:
                self._results.put_nowait(item)
                if self._wakes is None or self._wakes(item):
                    self.wake.set()
                return
            except queue.Full:
                await asyncio.sleep(0.02)
