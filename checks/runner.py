"""Conduct a check through the pipeline: claim it, plan its batches, run
each batch, finish it once.

    plan     checks.pipeline.plan: each target's kind plans its source ->
             page jobs -> CheckBatch rows
    a batch  its pages' work (checks.pipeline.plan) -> fetch, extract,
             compare, judge, record on one event loop (checks.pipeline.batch)
    finish   the batch that ends last lets each kind add its part (a crawl's
             removed pages, a search's counts), then finishes the check (a
             conditional update, so exactly once) and announces it
             (checks.notify)

A check with more pages than a batch fans out: its first batch runs in the
task that claimed it and the others are queued as run_batch_task, which any
worker on any machine takes; parallelism comes from Celery's workers, not
from inside a task. Each batch is claimed with a conditional update and
heart-beats while it runs; the sweeper (fail_stale_checks) sends again a
batch whose worker died or whose message was lost, and gives a check up, with
a reason, only after its batches were tried MAX_ATTEMPTS times.

Fetching is async (one event loop per batch, run a step at a time from this
thread); everything touching the database runs between those steps, in plain
synchronous Django, so no thread and no process pool is needed.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime, timedelta

from celery import current_app
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q

from checks import notify, outages, shared_clock
from checks.ai.stage import Enricher
from checks.content import ocr
from checks.errors import wait_words
from checks.fetch import OutboundClient, Resolver
from checks.models import Check, CheckBatch, Heartbeat
from checks.pipeline import plan as planning
from checks.pipeline.batch import BatchPages, hand_over, run_pages
from checks.pipeline.fetch import BrowserFetcher, Fetchers, HttpFetcher, from_cache
from checks.pipeline.judge import Judge, RulesJudge
from checks.pipeline.outcome import CheckAbandoned, Item, PageWork
from checks.targets import BatchParts, all_kinds
from monitors.models import Target

logger = logging.getLogger(__name__)

RUN_CHECK_TASK = "checks.tasks.run_check_task"
RUN_BATCH_TASK = "checks.tasks.run_batch_task"
# Claims of one check's task, or of one batch, before it is given up.
MAX_ATTEMPTS = 3
# A queued check no worker picked up within this long lost its message.
STALE_QUEUED_AFTER = timedelta(minutes=10)
STALE_SWEEP_LIMIT = 500
STALE_RUNNING_MESSAGE = (
    "Monitor check stopped responding (its worker was lost) and was ended."
)
GIVEN_UP_MESSAGE = f"Monitor check was given up after {MAX_ATTEMPTS} attempts."
TIME_LIMIT_MESSAGE = "Monitor check exceeded its time limit and was stopped."
CRASH_MESSAGE = "Monitor check failed because of an internal error."


def stale_queued_message() -> str:
    """Said on a queued check no worker picked up within STALE_QUEUED_AFTER."""
    return (
        "Monitor check was not picked up by a worker within "
        f"{wait_words(STALE_QUEUED_AFTER)} and was ended."
    )


def no_browser_message() -> str:
    """Said on a check whose browser pages no worker took within
    CheckBatch.REQUEUE_AFTER (fail_stale_checks)."""
    return (
        "Monitor check needs a web browser for some pages, and no worker that "
        f"runs one took them within {wait_words(CheckBatch.REQUEUE_AFTER)}; "
        "it was ended."
    )


def stale_running_after() -> timedelta:
    """A batch (or check) silent this long lost its worker: it heart-beats
    every checks.pipeline.batch.HEARTBEAT_SECONDS while alive."""
    return timedelta(seconds=int(settings.CHECK_STALE_AFTER_SECONDS))


# --- Claiming ----------------------------------------------------------------------


def begin_delivery(
    check_id: str | uuid.UUID, now: datetime | None = None
) -> Check | None:
    """Count one delivery of the check's task; None when there is nothing to do.

    The counter lives in the database, so a check whose task keeps killing its
    worker is failed after MAX_ATTEMPTS instead of looping. Only a delivery
    that may take the check counts: a second message for a check another
    worker is running (a message sent again by the sweeper, say) costs it
    nothing, and the caller looks again later (is_busy)."""
    now = now or shared_clock.now()
    claimable = Q(status=Check.Status.QUEUED) | Q(
        status=Check.Status.RUNNING, heartbeat_at__lt=now - stale_running_after()
    )
    updated = (
        Check.objects.filter(pk=check_id)
        .filter(claimable)
        .update(attempts=F("attempts") + 1)
    )
    check = (
        Check.objects.select_related("monitor__team")
        .filter(pk=check_id, status__in=Check.IN_FLIGHT)
        .first()
    )
    if check is None or not updated:
        return check  # gone or finished (None), or another worker's for now
    if check.attempts > MAX_ATTEMPTS:
        fail(check.pk, GIVEN_UP_MESSAGE)
        return None
    return check


def claim(check: Check, now: datetime | None = None) -> bool:
    """Make the check ours (see Check.claim) and hold its credits. False when
    someone else has it, or when the credits do not cover it (it then ends as
    skipped_no_credits, announced like any other end)."""
    now = now or shared_clock.now()
    with transaction.atomic():
        if not check.claim(now, stale_running_after()):
            return False
        if check.reserve_credits(now):
            return True
        notify.on_check_finished(check)
        return False


def is_busy(check: Check, now: datetime | None = None) -> bool:
    """Running with a fresh heartbeat: another worker is (or was just) on it."""
    now = now or shared_clock.now()
    check.refresh_from_db(fields=["status", "heartbeat_at"])
    return (
        check.status == Check.Status.RUNNING
        and check.heartbeat_at is not None
        and check.heartbeat_at >= now - stale_running_after()
    )


# --- Running -----------------------------------------------------------------------


def run(check: Check, *, resolver: Resolver | None = None) -> Check:
    """Claim and run a check to its end in this process, every batch here;
    returns it as stored afterwards. Never raises for page problems (they are
    page results) nor for a crash (the check is failed with a reason)."""
    if claim(check):
        execute(check, resolver=resolver)
    check.refresh_from_db()
    return check


def execute(
    check: Check, *, resolver: Resolver | None = None, fan_out: bool = False
) -> None:
    """Plan a claimed check and run its open batches: all of them here, or
    with `fan_out` the first here and the others queued for any worker."""
    with _guarded(check.pk), _ocr_within_time_limit():
        batches = plan(check, resolver)
        if fan_out:
            first = _first_for_here(batches)
            batches = first + _enqueue([b for b in batches if b not in first])
        _run_batches(batches, resolver, fan_out)
        _run_held_back(check.pk, resolver, fan_out)
        finish_if_done(check.pk)


def log_where_it_stands(check: Check) -> None:
    """One line when the check's own task is done with it. The check may be
    gone: an admin deletes a runaway check while it runs."""
    row = Check.objects.filter(pk=check.pk).values_list("status", "pages_total")
    status_and_pages = row.first()
    if status_and_pages is None:
        logger.info(
            "Check %s of monitor %s was deleted while it ran",
            check.pk,
            check.monitor_id,
        )
        return
    logger.info(
        "Check %s of monitor %s is %s (%d pages)",
        check.pk,
        check.monitor_id,
        *status_and_pages,
    )


def _first_for_here(batches: list[CheckBatch]) -> list[CheckBatch]:
    """The batch the check's own task runs: the first, unless browser pages
    have a queue of their own, then the first of plain fetches (if any)."""
    plain = [b for b in batches if not (b.uses_browser and browser_queue())]
    return plain[:1]


def browser_queue() -> str | None:
    """The Celery queue of browser batches; None when they go with the rest."""
    return str(settings.BROWSER_QUEUE or "") or None


def browser_worker_seen(now: datetime) -> bool:
    """Whether a worker serving the browser queue took a batch within
    CheckBatch.REQUEUE_AFTER, or is on one now (a long batch of slow pages
    holds it longer than that)."""
    since = now - CheckBatch.REQUEUE_AFTER
    taken = Heartbeat.last_seen().get(Heartbeat.BROWSER)
    return (taken is not None and taken >= since) or CheckBatch.objects.filter(
        status=CheckBatch.Status.RUNNING,
        uses_browser=True,
        heartbeat_at__gte=now - stale_running_after(),
    ).exists()


def run_batch(batch_id: int, *, resolver: Resolver | None = None) -> bool:
    """Run one queued batch (run_batch_task); False when another worker is on
    it and its heartbeat is fresh (the caller looks again later)."""
    batch = CheckBatch.objects.filter(pk=batch_id).first()
    if batch is None or batch.status not in CheckBatch.OPEN:
        return True  # gone, or done already: a duplicate message
    with _guarded(batch.check_run_id), _ocr_within_time_limit():
        added = _run_batch(batch, resolver)
        if added is None:
            return False
        _run_batches(_enqueue(added), resolver, fan_out=True)
        _run_held_back(batch.check_run_id, resolver, fan_out=True)
        finish_if_done(batch.check_run_id)
    return True


def _run_batches(
    batches: list[CheckBatch], resolver: Resolver | None, fan_out: bool
) -> None:
    """Run these batches here, and the batches their crawls find: queued for
    any worker with `fan_out`, except a paced crawl's (see _enqueue)."""
    while batches:
        added = _run_batch(batches.pop(0), resolver) or []
        batches += _enqueue(added) if fan_out else added


def _run_held_back(
    check_id: uuid.UUID, resolver: Resolver | None, fan_out: bool
) -> None:
    """Run the pages the kinds held back until no batch was open (see
    held_back), as the batches before them were run."""
    while more := held_back(check_id):
        _run_batches(_enqueue(more) if fan_out else more, resolver, fan_out)


def held_back(check_id: uuid.UUID) -> list[CheckBatch]:
    """The batches of pages the kinds held back until no batch of the check
    was open (a crawl's links waiting for room within its limit)."""
    return [batch for kind in all_kinds() for batch in kind.held_back(check_id)]


def _enqueue(batches: list[CheckBatch]) -> list[CheckBatch]:
    """Queue batches for any worker; returns those that must stay here: a
    target paced by its kind (a crawl with a delay or a concurrency cap) runs
    its pages one batch after another in one task, so the pace holds across
    all of them."""
    paced = {t for t, (cap, _) in _paces(batches).items() if cap is not None}
    local = [b for b in batches if _batch_target(b) in paced]
    enqueue_batches([b for b in batches if b not in local])
    return local


def _ocr_within_time_limit() -> AbstractContextManager[None]:
    """All the OCR of this task's PDFs, together, ends OCR_CHECK_SECONDS
    after the task started (its time limit less time to record its pages):
    PDFs not read by then are page errors that say so, where reading them
    one after another would have had the time limit end the whole check."""
    return ocr.within(settings.OCR_CHECK_SECONDS)


class _guarded:
    """Whatever ends a run early ends its check with a reason, never silently."""

    def __init__(self, check_id: uuid.UUID) -> None:
        self.check_id = check_id

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, *_: object
    ) -> bool:
        if kind is None:
            return False
        if issubclass(kind, CheckAbandoned):
            logger.info("Check %s was ended elsewhere while running", self.check_id)
        elif exc is not None and outages.database_away(exc):
            # The database went away (a restart, a failover, a session ended
            # by an administrator): nothing is wrong with the check, and the
            # database may still be away, so nothing is written. Its running
            # batch stops heart-beating and the sweeper sends it again once
            # the stale time is past (MAX_ATTEMPTS bounds it); pages recorded
            # before are kept.
            logger.warning(
                "Check %s lost its database connection; it is taken up again "
                "once the database answers: %s",
                self.check_id,
                str(exc).strip(),
            )
        elif issubclass(kind, SoftTimeLimitExceeded):
            fail(self.check_id, TIME_LIMIT_MESSAGE)
        elif not Check.objects.filter(pk=self.check_id).exists():
            # Deleted meanwhile (an admin clearing out a runaway check): what
            # failed was writing to it, and there is nothing left to end.
            logger.info("Check %s was deleted while it ran", self.check_id)
        elif issubclass(kind, Exception):
            logger.exception("Check %s crashed", self.check_id)
            fail(self.check_id, CRASH_MESSAGE)
        else:
            return False  # KeyboardInterrupt, SystemExit: not ours to swallow
        return True


def plan(check: Check, resolver: Resolver | None = None) -> list[CheckBatch]:
    """The check's open batches, planned once (checks.pipeline.plan); a check
    with nothing it can run is failed with the reason."""
    try:
        return planning.plan(check, resolver)
    except planning.NotPlanned as refused:
        fail(check.pk, str(refused))
        raise CheckAbandoned from None


def _batch_target(batch: CheckBatch) -> str | None:
    return batch.pages[0][0] if batch.pages else None


def _paces(batches: list[CheckBatch]) -> dict[str, tuple[int | None, float]]:
    """The pace of each target whose pages lead these batches, by its id."""
    ids = {_batch_target(b) for b in batches} - {None}
    if not ids:
        return {}
    check_id = batches[0].check_run_id
    return {
        str(target.id): target.kind.pace(check_id, target)
        for target in Target.objects.filter(pk__in=ids)
        if target.kind is not None
    }


def enqueue_batches(batches: Sequence[CheckBatch]) -> None:
    """Queue committed batches for any worker, through one producer: browser
    batches on BROWSER_QUEUE when there is one."""
    if not batches:
        return
    queue = browser_queue()
    with current_app.producer_or_acquire() as producer:
        for batch in batches:
            options = {"queue": queue} if batch.uses_browser and queue else {}
            current_app.send_task(
                RUN_BATCH_TASK, args=[batch.pk], producer=producer, **options
            )


def _run_batch(batch: CheckBatch, resolver: Resolver | None) -> list[CheckBatch] | None:
    """Run one batch; the batches its crawl pages found ([] for none), or
    None when another worker is on it."""
    now = shared_clock.now()
    if not batch.claim(now, stale_running_after()):
        batch.refresh_from_db(fields=["status"])
        return [] if batch.status not in CheckBatch.OPEN else None
    if batch.uses_browser:
        # The sweeper tells a browser queue nobody serves from a busy one.
        Heartbeat.beat(Heartbeat.BROWSER, now)
    check = Check.objects.select_related("monitor").get(pk=batch.check_run_id)
    if check.status != Check.Status.RUNNING:
        raise CheckAbandoned
    if batch.attempts > MAX_ATTEMPTS:
        fail(check.pk, GIVEN_UP_MESSAGE)
        raise CheckAbandoned
    work, kinds = planning.batch_pages(check, batch)
    parts = BatchParts(check, [w.job for w in work], kinds, resolver=resolver, now=now)
    decided: list[Item] = []
    to_fetch: list[PageWork] = []
    for_browser = []
    for page in work:
        outcome = parts.decided(page.job) or from_cache(page.job, page.baseline, now)
        if outcome is not None:
            decided.append(Item(page.job, outcome, page.baseline))
        elif page.job.browser and not batch.uses_browser and browser_queue():
            for_browser.append(page.job)  # remembered, say, since it was planned
        else:
            to_fetch.append(page)
    added = hand_over(check, for_browser)
    if to_fetch or decided:
        pages = BatchPages(
            _fetchers(batch, resolver),
            to_fetch,
            decided,
            crawls=parts.links,
            judges=_judges(check, parts, resolver),
        )
        added += run_pages(check, batch, pages)
    batch.complete()
    return added


def _judges(check: Check, parts: BatchParts, resolver: Resolver | None) -> list[Judge]:
    """A search's judge first (it settles each result's status, never
    "changed", so the later judges leave search results alone), then the
    monitor's change rules, then the model's part."""
    judges: list[Judge] = [RulesJudge(), Enricher(check.monitor, resolver=resolver)]
    if parts.judge is not None:
        judges.insert(0, parts.judge)
    return judges


def _fetchers(batch: CheckBatch, resolver: Resolver | None) -> Fetchers:
    cap, delay = _paces([batch]).get(_batch_target(batch) or "", (None, 0.0))
    client = OutboundClient(resolver=resolver, concurrency=cap)
    return Fetchers(HttpFetcher(client, delay=delay), BrowserFetcher(resolver))


# --- Ending ------------------------------------------------------------------------


def finish_if_done(check_id: uuid.UUID) -> Check | None:
    """Finish the check when none of its batches is open any more."""
    if CheckBatch.objects.filter(check_run_id=check_id).open().exists():
        return None
    for kind in all_kinds():
        kind.finish(check_id)
    return finish(check_id)


def finish(check_id: uuid.UUID) -> Check | None:
    """running -> completed | partial, announced; None when it was not running
    (failed by the sweeper meanwhile: its word stands)."""
    with transaction.atomic():
        check = Check.objects.lock(check_id, Check.Status.RUNNING)
        if check is None:
            return None
        check.finish(shared_clock.now(), announce=_announce_finished)
        return check


def _announce_finished(check: Check) -> None:
    notify.on_check_finished(check, write=False)  # saved with the check


def fail(
    check_id: uuid.UUID | str,
    message: str,
    now: datetime | None = None,
    *,
    where: Q | None = None,
) -> bool:
    """End an in-flight check as failed, announced (see Check.fail). `where`
    narrows which checks may be failed: the sweeper re-states its staleness
    test, so a check claimed meanwhile is spared."""
    with transaction.atomic():
        check = Check.objects.filter(where or Q()).lock(check_id, *Check.IN_FLIGHT)
        if check is None:
            return False
        check.fail(message, now or shared_clock.now())
        notify.on_check_finished(check)
        return True


# --- Lost work ---------------------------------------------------------------------


def fail_stale_checks(now: datetime) -> int:
    """What lost workers and lost messages left behind, found and mended:
    a lost batch is sent again (or, after MAX_ATTEMPTS, its check is failed
    with the reason), and so is a check whose planning was lost; a check left
    queued, or running with no open batch and nobody to take it up again, is
    failed. Returns how many checks were failed."""
    failed = _requeue_lost_batches(now)
    _send_lost_check_messages(now)
    queued_before = now - STALE_QUEUED_AFTER
    running_before = now - stale_running_after()
    # A running check with no batch is sent again for as long as a lost
    # queued check would be, counted from when its heartbeat went stale (a
    # stale time set above that window must not fail it unplanned).
    plan_again_since = running_before - STALE_QUEUED_AFTER
    stale = list(
        Check.objects.stale(queued_before, running_before)
        .order_by("created_at")
        .values_list("pk", "status", "heartbeat_at", "attempts")[:STALE_SWEEP_LIMIT]
    )
    unplanned = []
    for pk, status, heartbeat_at, attempts in stale:
        if status == Check.Status.QUEUED:
            where = Q(status=status, created_at__lt=queued_before)
            failed += fail(pk, stale_queued_message(), now, where=where)
            continue
        batches = CheckBatch.objects.filter(check_run_id=pk)
        if batches.open().exists():
            continue  # its batches are being mended above
        if batches.exists():
            if more := held_back(pk):
                enqueue_batches(more)  # the pages held back for the end
                continue
            if finish_if_done(pk) is not None:
                continue  # every batch was done; the one that finishes had died
        elif heartbeat_at >= plan_again_since:
            unplanned.append((pk, attempts))
            continue
        where = Q(status=status, heartbeat_at__lt=running_before)
        failed += fail(pk, STALE_RUNNING_MESSAGE, now, where=where)
    return failed + _plan_again(unplanned, now)


def _plan_again(unplanned: list[tuple[uuid.UUID, int]], now: datetime) -> int:
    """Running checks with no batch: their worker died while planning them
    (a crawl reading its sitemaps, say). Planning writes nothing until its
    end, where the batches are written in one transaction, so each is sent
    again and the worker that takes it over (begin_delivery) plans it from
    the start; one that lost MAX_ATTEMPTS workers is given up. As for lost
    queued checks (_send_lost_check_messages), they are sent only while no
    check message waits, so a message already on its way is not doubled on
    every sweep. One nobody took up within STALE_QUEUED_AFTER of its
    heartbeat going stale is not sent again: a later sweep fails it as it fails any
    silent running check (fail_stale_checks). Returns how many checks were
    failed."""
    failed, again = 0, []
    stale = Q(status=Check.Status.RUNNING, heartbeat_at__lt=now - stale_running_after())
    for pk, attempts in unplanned:
        if attempts >= MAX_ATTEMPTS:
            failed += fail(pk, GIVEN_UP_MESSAGE, now, where=stale)
        else:
            again.append(pk)
    _send_again(again, "checks whose planning was lost")
    return failed


def _send_lost_check_messages(now: datetime) -> None:
    """Checks queued past the stale time while no check message waits in the
    broker: their message is gone, taken by a worker killed before it claimed
    the check (Redis gives an unacknowledged message back only after its
    visibility timeout, an hour) or never sent (the broker was down). Each is
    sent again; a message that turns up later finds the check taken and does
    nothing (begin_delivery). Behind a backlog, checks wait their turn (and
    the queued sweep below ends those that waited too long)."""
    lost = list(
        Check.objects.filter(
            status=Check.Status.QUEUED,
            created_at__lt=now - stale_running_after(),
            created_at__gte=now - STALE_QUEUED_AFTER,
        )
        .order_by("created_at")
        .values_list("pk", flat=True)[:STALE_SWEEP_LIMIT]
    )
    _send_again(lost, "queued checks whose message was lost")


def _send_again(checks: list[uuid.UUID], what: str) -> None:
    """A message to run each of these checks, sent only while no check
    message waits: one already on its way is not doubled on every sweep, and
    behind a backlog they wait their turn."""
    if not checks or waiting_messages(settings.CELERY_TASK_DEFAULT_QUEUE) != 0:
        return
    with current_app.producer_or_acquire() as producer:
        for pk in checks:
            current_app.send_task(RUN_CHECK_TASK, args=[str(pk)], producer=producer)
    # Said once sent: a broker away ends the sweep with its own line.
    logger.warning("Sent %d %s again", len(checks), what)


def waiting_messages(queue: str) -> int | None:
    """Messages waiting on `queue`; None when the broker cannot say."""
    try:
        with current_app.connection_for_write() as connection:
            # Not passive: Redis drops an empty queue's key, and a passive
            # declaration of it would fail.
            declared = connection.default_channel.queue_declare(queue=queue)
    except Exception as exc:
        # The broker away is routine (the sweeper asks on every run of an
        # outage): its reason in one line; anything else with its traceback.
        outages.warn(logger, exc, "Could not count the messages on %s", queue)
        return None
    return int(declared.message_count)


def _batches_whose_message_is_gone(now: datetime) -> list[CheckBatch]:
    """Pending batches queued past the stale time while no message waits on
    any queue a batch goes to: a Redis without persistence that came back
    empty lost them, and waiting CheckBatch.REQUEUE_AFTER would leave their
    check standing still for ten minutes. As with checks
    (_send_lost_check_messages), behind a backlog they wait their turn; a
    duplicate message finds its batch taken and does nothing."""
    waiting = CheckBatch.objects.filter(
        status=CheckBatch.Status.PENDING,
        heartbeat_at__lt=now - stale_running_after(),
        check_run__status=Check.Status.RUNNING,
    ).order_by("heartbeat_at")
    batches = list(waiting[:STALE_SWEEP_LIMIT])
    if not batches:
        return []
    queues = {settings.CELERY_TASK_DEFAULT_QUEUE, browser_queue()} - {None}
    if any(waiting_messages(queue) != 0 for queue in queues):
        return []
    return batches


def _requeue_lost_batches(now: datetime) -> int:
    lost = list(
        CheckBatch.objects.lost(now, stale_running_after())
        .filter(check_run__status=Check.Status.RUNNING)
        .order_by("heartbeat_at")[:STALE_SWEEP_LIMIT]
    )
    seen = {batch.pk for batch in lost}
    lost += [b for b in _batches_whose_message_is_gone(now) if b.pk not in seen]
    failed, again = 0, []
    untaken_before = now - CheckBatch.REQUEUE_AFTER
    no_browser: bool | None = None  # asked once, and only when it matters
    for batch in lost:
        if batch.attempts >= MAX_ATTEMPTS:
            failed += fail(batch.check_run_id, GIVEN_UP_MESSAGE, now)
            continue
        if (
            batch.uses_browser
            and batch.status == CheckBatch.Status.PENDING
            and batch.heartbeat_at < untaken_before
            and browser_queue()
        ):
            if no_browser is None:
                no_browser = not browser_worker_seen(now)
            if no_browser:
                # Sent again, it would wait again, and its check with it, for
                # ever (and every later check of its monitor be skipped).
                if fail(batch.check_run_id, no_browser_message(), now):
                    failed += 1
                    logger.warning(
                        "Check %s ended: its browser pages waited %d minutes and "
                        "no worker serves the browser queue %r (start one: "
                        "celery -A config worker --queues=%s)",
                        batch.check_run_id,
                        CheckBatch.REQUEUE_AFTER.total_seconds() // 60,
                        browser_queue(),
                        browser_queue(),
                    )
                continue
        # Conditional: a batch that came back to life meanwhile is left alone.
        if CheckBatch.objects.filter(
            pk=batch.pk, status=batch.status, heartbeat_at=batch.heartbeat_at
        ).update(status=CheckBatch.Status.PENDING, heartbeat_at=now):
            again.append(batch)
            Check.objects.filter(pk=batch.check_run_id).update(heartbeat_at=now)
    if again:
        enqueue_batches(again)
        logger.warning("Sent %d lost page batches again", len(again))
    return failed
