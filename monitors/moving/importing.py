"""Creating the planned monitors. Each monitor is made in its own transaction
(its targets, its e-mail subscriptions and its first baselines with it), so an
import stopped half-way leaves whole monitors and a report of which, never a
monitor without its pages."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from celery import current_app
from django.db import DatabaseError, transaction
from django.utils import timezone

from checks.content import content_hash, strip_noise
from checks.models import PageState, Snapshot
from monitors.editing import create_monitor
from monitors.models import ImportRun, Monitor, Team
from monitors.moving import plan
from monitors.moving.base import Planned


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


def _baselines(monitor: Monitor, item: Planned, now: datetime) -> None:
    targets = {url: t for t in monitor.targets.all() for url in t.urls or []}
    states = []
    for baseline in item.baselines:
        target = targets.get(baseline.url)
        if target is None or not baseline.text.strip():
            continue
        snapshot = Snapshot.store(baseline.text)
        states.append(
            PageState(
                monitor=monitor,
                target_id=target.id,
                url=baseline.url,
                url_hash=PageState.hash_url(baseline.url),
                snapshot=snapshot,
                normalized_hash=content_hash(
                    strip_noise(baseline.text, monitor.ignore_lines)
                ),
                fetched_at=baseline.taken_at or now,
                metadata={"importedFrom": item.ref},
            )
        )
    if states:
        PageState.upsert(states)


def import_one(team: Team, item: Planned, now: datetime) -> Monitor:
    assert item.validated is not None
    with transaction.atomic():
        monitor = create_monitor(team, item.validated, now)
        if item.paused:
            monitor.pause()
            monitor.save(update_fields=["status", "next_run_at", "updated_at"])
        _baselines(monitor, item, now)
    return monitor


def run_import(
    team: Team,
    items: list[Planned],
    now: datetime,
    *,
    include_duplicates: Collection[str] | bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> Report:
    """Create every importable item; duplicates only when chosen (True for
    all of them, or the refs of those chosen)."""
    report = Report()
    for number, item in enumerate(items, start=1):
        chosen = include_duplicates is True or (
            not isinstance(include_duplicates, bool) and item.ref in include_duplicates
        )
        if not item.importable:
            report.outcomes.append(Outcome(item, "not imported"))
        elif item.duplicate and not chosen:
            report.outcomes.append(Outcome(item, "duplicate"))
        else:
            try:
                monitor = import_one(team, item, now)
            except DatabaseError as exc:
                report.outcomes.append(
                    Outcome(item, "failed", error=f"Could not be saved: {exc}")
                )
            else:
                report.outcomes.append(Outcome(item, "created", str(monitor.pk)))
        if progress is not None:
            progress(number, len(items))
    return report


# Imports up to this many monitors are made while the request waits; larger
# ones run as a task and show their progress.
INLINE_MAX = 25
IMPORT_TASK = "monitors.tasks.import_monitors_task"


def preview_run(
    team: Team, source: str, items: list[Planned], user: Any = None
) -> ImportRun:
    """Keep what a preview showed, so a confirmation imports exactly that."""
    return ImportRun.objects.create(
        team=team,
        created_by=user if getattr(user, "pk", None) else None,
        source=source,
        items=[item.to_state() for item in items],
        total=len(items),
    )


def planned_items(run: ImportRun) -> list[Planned]:
    """The run's items, judged again now: the rules or the team's monitors
    may have changed since the preview."""
    return plan.prepare(run.team, [Planned.from_state(s) for s in run.items])


def start_run(
    run: ImportRun, chosen_duplicates: Collection[str], now: datetime
) -> ImportRun:
    """Import now when small, else queue the task (after commit). Only a
    previewed run starts, once."""
    fields = {
        "status": ImportRun.Status.QUEUED,
        "chosen_duplicates": list(chosen_duplicates),
    }
    started = ImportRun.objects.filter(
        pk=run.pk, status=ImportRun.Status.PREVIEWED
    ).update(**fields)
    run.refresh_from_db()
    if not started:
        return run
    importable = sum(1 for s in run.items if s["payload"] is not None)
    if importable <= INLINE_MAX:
        if run.claim():
            execute_run(run, now)
        return run
    transaction.on_commit(
        lambda: current_app.send_task(IMPORT_TASK, args=[str(run.pk)])
    )
    return run


def execute_run(run: ImportRun, now: datetime) -> Report:
    """Import a claimed (running) run, recording progress as it goes."""
    items = planned_items(run)
    step = max(1, len(items) // 100)

    def progress(done: int, total: int) -> None:
        if done % step == 0 or done == total:
            run.record_progress(done)

    report = run_import(
        run.team,
        items,
        now,
        include_duplicates=set(run.chosen_duplicates),
        progress=progress,
    )
    run.finish(report.as_dict(), timezone.now())
    return report
