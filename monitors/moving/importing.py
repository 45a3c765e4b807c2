"""Creating the planned monitors. Monitors are made in batches, each batch in
one transaction with their targets, e-mail subscriptions and first baselines;
a batch that fails is made again one monitor per transaction. So an import
stopped half-way leaves whole monitors and a report of which, never a monitor
without its pages."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from celery import current_app
from django.db import DatabaseError, transaction
from django.utils import timezone

from checks import outages, shared_clock
from checks.content import content_hash, pack_snapshot, strip_noise
from checks.models import PageState, Snapshot
from monitors import moving
from monitors.channel_editing import save_channel
from monitors.editing import create_monitors
from monitors.models import ApiKey, ImportRun, Monitor, MonitorChannel, Team
from monitors.moving import plan, remote
from monitors.moving.base import ImportRefused, Planned, Source
from monitors.wire.channel import ChannelInputSerializer
from teams.activity import SYSTEM, Actor, Kind, Via, record, record_created

logger = logging.getLogger(__name__)


@dataclass
class Outcome:
    item: Planned
    result: str  # "created", "duplicate", "not imported", "failed"
    monitor_id: str | None = None
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return self.item.as_dict() | {
            "result": self.result,
            "monitorId": self.monitor_id,
            "error": self.error or None,
        }


@dataclass
class Report:
    outcomes: list[Outcome] = field(default_factory=list)

    def count(self, result: str) -> int:
        return sum(1 for o in self.outcomes if o.result == result)

    @property
    def created(self) -> int:
        return self.count("created")

    def as_dict(self) -> dict[str, Any]:
        return {
            "created": self.created,
            "duplicates": self.count("duplicate"),
            "notImported": self.count("not imported"),
            "failed": self.count("failed"),
            "items": [o.as_dict() for o in self.outcomes],
        }


# Monitors made together in one transaction; a batch that fails to save is
# made again one monitor at a time, so one bad row costs only itself.
BATCH = 100


def _data(item: Planned) -> dict[str, Any]:
    assert item.validated is not None
    return item.validated | ({"status": Monitor.Status.PAUSED} if item.paused else {})


def _page_states(
    pairs: list[tuple[Monitor, Planned]], now: datetime
) -> list[PageState]:
    """The first baselines of these new monitors: each page's last snapshot
    from the source, stored as a check would have stored it."""
    wanted = []
    for monitor, item in pairs:
        targets = {
            url: t
            for t in monitor.target_list
            if t.kind is not None
            for url in t.kind.addresses(t)
        }
        for baseline in item.baselines:
            target = targets.get(baseline.url)
            if target is not None and baseline.text.strip():
                wanted.append((monitor, item, target, baseline))
    packs = [pack_snapshot(b.text) for _, _, _, b in wanted]
    ids = Snapshot.store_many(packs)
    return [
        PageState(
            monitor=monitor,
            target_id=target.id,
            url=baseline.url,
            url_hash=PageState.hash_url(baseline.url),
            snapshot_id=ids[pack[0]],
            normalized_hash=content_hash(
                strip_noise(baseline.text, monitor.ignore_lines)
            ),
            fetched_at=baseline.taken_at or now,
            metadata={"importedFrom": item.ref},
        )
        for (monitor, item, target, baseline), pack in zip(wanted, packs, strict=True)
    ]


def _make(
    team: Team,
    items: list[Planned],
    now: datetime,
    actor: Actor = SYSTEM,
    source: str = "",
) -> list[Monitor]:
    """These items' monitors with their targets and baselines, and their
    "created" entries in the activity log (saying from where, in words):
    all or none."""
    with transaction.atomic():
        monitors = create_monitors(
            team, [_data(i) for i in items], now, by=actor.person_name
        )
        states = _page_states(list(zip(monitors, items, strict=True)), now)
        if states:
            PageState.upsert(states)
        record_created(actor, team, monitors, imported=True, source=source)
        _link_channels(team, list(zip(monitors, items, strict=True)), now, actor)
    return monitors


def _link_channels(
    team: Team, pairs: list[tuple[Monitor, Planned]], now: datetime, actor: Actor
) -> None:
    """Link each new monitor to the channels its watch notified, making the
    channels the team does not have yet (once, whatever the number of
    watches using one), as the Channels page would."""
    wanted = [c for _, item in pairs for c in item.channels]
    if not wanted:
        return
    have = plan.team_apprise_channels(team)
    refused: set[str] = set()
    for channel in wanted:
        if channel["url"] not in have and channel["url"] not in refused:
            body = {"name": channel["name"], "kind": "apprise"}
            body["settings"] = {"url": channel["url"]}
            serializer = ChannelInputSerializer(data=body, context={"team": team})
            if serializer.is_valid():  # as previewed, unless the rules changed
                made = save_channel(team, serializer.validated_data, now)
                record(actor, team, Kind.CHANNEL_CREATED, name=made.name)
                have[channel["url"]] = made
            else:
                refused.add(channel["url"])
    for _, item in pairs:
        # The report lists an item's channels as made: one refused is said
        # instead (by its name: the URL holds the service's secret).
        for channel in [c for c in item.channels if c["url"] not in have]:
            note = (
                f"Its channel “{channel['name']}” was not made: the Channels "
                "page's rules refused it when the import ran. Add it there."
            )
            if note not in item.notes:
                item.notes.append(note)
        item.channels = [c for c in item.channels if c["url"] in have]
    MonitorChannel.objects.bulk_create(
        [
            MonitorChannel(monitor=monitor, channel=have[url])
            for monitor, item in pairs
            for url in dict.fromkeys(c["url"] for c in item.channels)
            if url in have
        ]
    )


def _chosen(item: Planned, include_duplicates: Collection[str] | bool) -> bool:
    if isinstance(include_duplicates, bool):
        return include_duplicates
    return item.ref in include_duplicates


def run_import(
    team: Team,
    items: list[Planned],
    now: datetime,
    *,
    include_duplicates: Collection[str] | bool = False,
    progress: Callable[[int, int], None] | None = None,
    actor: Actor = SYSTEM,
    source: str = "",
    made_before: Mapping[int, str] | None = None,
    on_made: Callable[[dict[int, str]], None] | None = None,
) -> Report:
    """Create every importable item; duplicates only when chosen (True for
    all of them, or the refs of those chosen). Outcomes keep the source's
    order. `source` names where they came from, for the activity log.
    Items in `made_before` (index → monitor id) were made by an earlier
    attempt; `on_made` is told of each batch made, inside its transaction.
    The database going away is raised, not reported item by item."""
    words = Source.registry[source].label_in_sentence() if source else ""
    made_before = made_before or {}
    outcomes: dict[int, Outcome] = {}
    todo: list[tuple[int, Planned]] = []
    for index, item in enumerate(items):
        if index in made_before:
            outcomes[index] = Outcome(item, "created", made_before[index])
        elif not item.importable:
            outcomes[index] = Outcome(item, "not imported")
        elif item.duplicate and not _chosen(item, include_duplicates):
            outcomes[index] = Outcome(item, "duplicate")
        else:
            todo.append((index, item))
    done = len(outcomes)
    for start in range(0, len(todo), BATCH):
        batch = todo[start : start + BATCH]
        try:
            made = _made(team, batch, now, actor, words, on_made)
        except DatabaseError as exc:
            if outages.away(exc):
                raise
            made = None
        if made is not None:
            for (index, item), monitor in zip(batch, made, strict=True):
                outcomes[index] = Outcome(item, "created", str(monitor.pk))
        else:
            for index, item in batch:
                outcomes[index] = _one(team, index, item, now, actor, words, on_made)
        done += len(batch)
        if progress is not None:
            progress(done, len(items))
    if progress is not None and not todo:
        progress(len(items), len(items))
    return Report([outcomes[i] for i in range(len(items))])


def _made(
    team: Team,
    batch: list[tuple[int, Planned]],
    now: datetime,
    actor: Actor,
    source: str,
    on_made: Callable[[dict[int, str]], None] | None,
) -> list[Monitor]:
    with transaction.atomic():
        made = _make(team, [item for _, item in batch], now, actor, source)
        if on_made is not None:
            on_made({i: str(m.pk) for (i, _), m in zip(batch, made, strict=True)})
    return made


def _one(
    team: Team,
    index: int,
    item: Planned,
    now: datetime,
    actor: Actor,
    source: str,
    on_made: Callable[[dict[int, str]], None] | None,
) -> Outcome:
    try:
        (monitor,) = _made(team, [(index, item)], now, actor, source, on_made)
    except DatabaseError as exc:
        if outages.away(exc):
            raise  # not this monitor's fault: the whole import waits for it
        # The report is read by people: the database's own words go to the log.
        logger.exception("Import of %r into team %s not saved", item.ref, team.pk)
        return Outcome(item, "failed", error=NOT_SAVED)
    return Outcome(item, "created", str(monitor.pk))


NOT_SAVED = (
    "The database did not save it; nothing of it was made. Try importing it "
    "again (its log has the details)."
)

# Imports up to this many monitors are made while the request waits; larger
# ones run as a task and show their progress.
INLINE_MAX = 25
IMPORT_TASK = "monitors.tasks.import_monitors_task"


def preview_run(
    team: Team,
    source: str,
    items: list[Planned],
    user: Any = None,
    api_key: ApiKey | None = None,
) -> ImportRun:
    """Keep what a preview showed, so a confirmation imports exactly that,
    and who asked (a person, or an API key)."""
    return ImportRun.objects.create(
        team=team,
        created_by=user if getattr(user, "pk", None) else None,
        api_key=api_key,
        source=source,
        items=[item.to_state() for item in items],
        total=len(items),
    )


# Previews of up to this many watches are judged while the request waits
# (a fraction of a second); larger ones by a task whose progress the page
# shows, as judging thousands by the API's rules takes seconds.
PREVIEW_INLINE_MAX = 100
PREVIEW_TASK = "monitors.tasks.preview_import_task"
PREVIEW_FAILED = (
    "The preview could not be made because of an error in Pagewatch (its log "
    "has the details). Nothing was imported. Please start again."
)
PREVIEW_NOT_QUEUED = (
    "The preview could not be made: Pagewatch cannot reach its task queue right "
    "now. Nothing was imported. Please try again in a moment."
)


def start_preview(
    team: Team, source: str, items: list[Planned], user: Any = None
) -> ImportRun:
    """Keep the items read from the source, not judged yet, and who asked;
    judge them at once when few, else queue the task that does (after
    commit). The run is previewed, or preparing, or says why the preview
    could not be made."""
    run = ImportRun.objects.create(
        team=team,
        created_by=user if getattr(user, "pk", None) else None,
        source=source,
        status=ImportRun.Status.PREPARING,
        items=[item.to_state() for item in items],
        total=len(items),
    )
    if len(items) <= PREVIEW_INLINE_MAX:
        build_preview(run)
    else:
        transaction.on_commit(lambda: _queue_preview(run))
    return run


def start_remote_preview(
    team: Team, source: str, url: str, api_key: str, user: Any = None
) -> ImportRun:
    """Keep the address and key of the service to read, and who asked, and
    queue the task that reads it (after commit): reading a service is a
    request or two per watch, minutes for thousands, so the request that
    asked never does it. An address that cannot be one is refused here
    (ImportRefused); the address policy applies when the task connects."""
    run = ImportRun.objects.create(
        team=team,
        created_by=user if getattr(user, "pk", None) else None,
        source=source,
        status=ImportRun.Status.PREPARING,
        remote_url=remote.base_url(url),
        remote_key=api_key,
    )
    transaction.on_commit(lambda: _queue_preview(run))
    return run


def build_preview(run: ImportRun) -> None:
    """Judge a preparing run's items for its team, as a preview made in the
    request would have, recording how many are judged as it goes; a run
    that comes from a service's address reads it first."""
    if run.remote_url and not read_remote(run, shared_clock.now()):
        return
    items = plan.prepare(
        run.team,
        [Planned.from_state(s) for s in run.items],
        progress=lambda done: run.record_progress(done, shared_clock.now()),
    )
    run.show_preview([item.to_state() for item in items])


def read_remote(run: ImportRun, now: datetime) -> bool:
    """Read the run's service into its items, counting the watches read as
    it goes; the key is forgotten as soon as reading ends, however it ends.
    False when the preview ended instead: the service's refusal, in its
    words, is the run's error."""
    try:
        items = moving.read_remote(
            run.source,
            run.remote_url,
            run.remote_key,
            progress=lambda done, total: run.record_reading(
                done, total, shared_clock.now()
            ),
        )
    except ImportRefused as refused:
        run.fail_preview(f"{refused.message} Nothing was imported.", now)
        return False
    finally:
        run.forget_remote_key()
    return run.finish_reading([item.to_state() for item in items])


def _queue_preview(run: ImportRun) -> None:
    try:
        current_app.send_task(PREVIEW_TASK, args=[str(run.pk)])
    except Exception as exc:
        # The producer already retried: left preparing, nothing would judge it.
        logger.warning("Could not queue the preview of import %s: %s", run.pk, exc)
        run.fail_preview(PREVIEW_NOT_QUEUED, timezone.now())


def previewed_items(run: ImportRun) -> list[Planned]:
    """The run's items as its preview judged them."""
    return [Planned.from_state(s) for s in run.items]


def planned_items(run: ImportRun) -> list[Planned]:
    """The run's items, judged again now: the rules or the team's monitors
    may have changed since the preview."""
    return plan.prepare(run.team, [Planned.from_state(s) for s in run.items])


def start_run(
    run: ImportRun, chosen_duplicates: Collection[str], now: datetime
) -> ImportRun:
    """Import now when small, else queue the task (after commit). Only a
    previewed run starts, once. Raises ImportNotQueued (after COMMIT) when
    the broker cannot take the task: the run is previewed again."""
    fields = {
        "status": ImportRun.Status.QUEUED,
        "chosen_duplicates": list(chosen_duplicates),
        # When it was queued: the stale sweep sends it again from there if
        # its message is lost (ImportRunQuerySet.stalled).
        "progressed_at": now,
    }
    started = ImportRun.objects.filter(
        pk=run.pk, status=ImportRun.Status.PREVIEWED
    ).update(**fields)
    run.refresh_from_db()
    if not started:
        return run
    importable = sum(1 for s in run.items if s["payload"] is not None)
    if importable <= INLINE_MAX:
        if run.claim(now=now):
            _execute_here(run, now)
        return run
    transaction.on_commit(lambda: _queue_or_put_back(run))
    return run


# A worker goes on with an import the request could not finish (its database
# went away) this long after: a restart or a failover is over by then.
GO_ON_AFTER = 60


class ImportPaused(Exception):
    """An import made in the request lost its database part way: a worker
    goes on with it from the monitors made (GO_ON_AFTER), or, when the task
    queue cannot take it either, the stale sweep does later. The message says
    how far it got, in words for people; `where` names where to follow it."""

    def __init__(self, made: int, of: int, where: str = "this page shows") -> None:
        self.made, self.of = made, of
        super().__init__(self.words(where))

    def words(self, where: str = "this page shows") -> str:
        return (
            "The database went away while the monitors were being made: "
            f"{self.made:,} of {self.of:,} were made. Pagewatch goes on with the "
            f"rest by itself in a minute; {where} how far it has got."
        )


def _execute_here(run: ImportRun, now: datetime) -> None:
    """Make a small import while the request waits; when the database goes
    away part way, hand the rest to a worker rather than leave it "running"
    until the stale sweep ends it."""
    try:
        execute_run(run, now)
    except Exception as exc:
        if not outages.database_away(exc):
            raise
        logger.warning(
            "Import %s paused in its request: the database is not reachable; a "
            "worker goes on in %s s: %s",
            run.pk,
            GO_ON_AFTER,
            outages.reason(exc),
        )
        go_on_later(run, countdown=GO_ON_AFTER)
        raise ImportPaused(len(run.made), max(len(run.made), run.to_make)) from None


def go_on_with_stalled(now: datetime) -> int:
    """The stale sweep's part: each import no worker has moved for
    ImportRun.STALLED_AFTER (a queued one QUEUED_STALLED_AFTER) is queued
    again to go on from the monitors made, while it has attempts left; the
    others end saying how far they got.
    Returns how many were queued again."""
    queued = 0
    for run in ImportRun.objects.stalled(now):
        idle = (
            ImportRun.QUEUED_STALLED_AFTER
            if run.status == ImportRun.Status.QUEUED
            else ImportRun.STALLED_AFTER
        )
        if run.attempts >= ImportRun.MAX_ATTEMPTS:
            if run.status == ImportRun.Status.QUEUED and not run.made:
                run.never_started(now)
            else:
                run.stop_part_way(ImportRun.STALLED, now)
        elif run.queue_again(now):
            logger.warning(
                "Import %s had not moved for %s: queued again to go on from the "
                "%s monitors made (attempt %s of %s)",
                run.pk,
                idle,
                len(run.made),
                run.attempts + 1,
                ImportRun.MAX_ATTEMPTS,
            )
            queued += _send_again(run)
    return queued


def _send_again(run: ImportRun) -> bool:
    try:
        current_app.send_task(IMPORT_TASK, args=[str(run.pk)])
    except Exception as exc:
        # Left queued: the next sweep past QUEUED_STALLED_AFTER sends it again.
        logger.warning("Could not queue import %s again: %s", run.pk, exc)
        return False
    return True


def go_on_later(run: ImportRun, countdown: int = 0) -> bool:
    """Queue the import task to go on with a running run from the monitors
    made (`made`), as its next attempt. A message that comes while another
    attempt is alive supersedes it (ImportRun.claim): the older one stops at
    its next batch and no monitor is made twice."""
    try:
        current_app.send_task(
            IMPORT_TASK,
            args=[str(run.pk)],
            kwargs={"resume": True},
            countdown=countdown,
        )
    except Exception as exc:
        # Left running: the stale sweep sends it again (ImportRun.STALLED_AFTER).
        logger.warning("Could not queue import %s to go on: %s", run.pk, exc)
        return False
    return True


class ImportNotQueued(Exception):
    """A large import the broker (Redis) could not take: the run is back to
    previewed, so its person can start it again; the API answers 503, the
    dashboard says so."""

    message = (
        "The import could not be started: Pagewatch cannot reach its task queue "
        "right now. Please try again in a moment."
    )


def _queue_or_put_back(run: ImportRun) -> None:
    try:
        current_app.send_task(IMPORT_TASK, args=[str(run.pk)])
    except Exception as exc:
        # The producer already retried (Celery's publish retry policy): left
        # queued, nothing would ever take the run.
        logger.warning("Could not queue import %s: %s", run.pk, exc)
        ImportRun.objects.filter(pk=run.pk, status=ImportRun.Status.QUEUED).update(
            status=ImportRun.Status.PREVIEWED
        )
        run.refresh_from_db()
        raise ImportNotQueued(ImportNotQueued.message) from None


def run_actor(run: ImportRun) -> Actor:
    """Who an import's monitors are logged as made by: the person who
    previewed it in the dashboard, else the API key that sent it."""
    if run.created_by_id is not None:
        return Actor(Via.DASHBOARD, user=run.created_by)
    return Actor(Via.API, key=run.api_key)


def execute_run(run: ImportRun, now: datetime) -> Report:
    """Import a claimed (running) run, recording progress as it goes and
    going on from the monitors an earlier attempt made. Progress is stamped
    on the database's clock (checks.shared_clock), as the stale sweep that
    judges it reads the time: a worker whose clock is behind would otherwise
    look stalled while it works, and be superseded."""
    items = planned_items(run)
    report = run_import(
        run.team,
        items,
        now,
        include_duplicates=set(run.chosen_duplicates),
        progress=lambda done, total: run.record_import_progress(
            done, shared_clock.now()
        ),
        actor=run_actor(run),
        source=run.source,
        made_before={int(index): pk for index, pk in run.made.items()},
        on_made=lambda made: run.record_made(made, shared_clock.now()),
    )
    run.finish(report.as_dict(), shared_clock.now())
    return report
