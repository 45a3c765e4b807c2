"""Run now: start a check of one monitor, or of many, and log it. One
workflow for the monitor's page and POST /v2/monitor/{id}/run, the list's
bulk "Check now" and POST /v2/monitor/bulk's run, and the admin's action.

Each monitor goes through checks.dispatch.queue_manual_check, which locks
its row and refuses it while paused or while a check is in flight, so a run
of many starts nothing a single run would not; credits and the AI
allowance are then the runner's, as for any check. A run of many goes
monitor by monitor in the one request (at most bulk.IDS_MAX; the API counts
each against the key's rate limit). When the task queue cannot take a
check, nothing more is tried: the broker is down for the rest too. A
database error on one monitor leaves that one alone (not started) and goes
on with the next. The activity entries of those started are written after
the loop, in one INSERT. What the person is told is the dashboard's and the
admin's (monitors.dashboard.runs_said)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import DatabaseError

from checks.dispatch import (
    PAUSED_CODE,
    QueueUnavailable,
    RunRefused,
    queue_manual_check,
)
from checks.models import Check
from monitors.models import Monitor
from teams.activity import Actor, Kind, record, record_each


def run_one(monitor: Monitor, actor: Actor) -> Check:
    """Start a check of `monitor` and log it; raises what queue_manual_check
    raises (RunRefused, QueueUnavailable, Monitor.DoesNotExist)."""
    check = queue_manual_check(monitor)
    record(actor, monitor.team_id, Kind.MONITOR_RUN, monitor)
    return check


@dataclass
class Runs:
    """What a run of many did, monitor by monitor."""

    started: dict[Monitor, Check] = field(default_factory=dict)
    paused: list[Monitor] = field(default_factory=list)
    running: list[Monitor] = field(default_factory=list)
    # Deleted (while we looked, or before: the admin lists deleted ones).
    gone: list[Monitor] = field(default_factory=list)
    # Not tried: the task queue could not take a check.
    queue_down: list[Monitor] = field(default_factory=list)
    # Not started: the database failed on them (try again).
    failed: list[Monitor] = field(default_factory=list)

    @property
    def left(self) -> list[Monitor]:
        return self.paused + self.running + self.gone + self.queue_down + self.failed


def run_each(monitors: Iterable[Monitor], actor: Actor) -> Runs:
    """Start a check of each of `monitors` (already scoped to the caller's
    team), one at a time, as run_one does."""
    runs = Runs()
    pending = list(monitors)
    for index, monitor in enumerate(pending):
        try:
            runs.started[monitor] = queue_manual_check(monitor)
        except RunRefused as refused:
            listed = runs.paused if refused.code == PAUSED_CODE else runs.running
            listed.append(monitor)
        except Monitor.DoesNotExist:
            runs.gone.append(monitor)
        except QueueUnavailable:
            runs.queue_down = pending[index:]
            break
        except DatabaseError:
            runs.failed.append(monitor)
    _log_started(runs, actor)
    return runs


def _log_started(runs: Runs, actor: Actor) -> None:
    """One entry per check started, in one INSERT per team (the admin's
    action may span teams)."""
    by_team: dict[object, list[Monitor]] = {}
    for monitor in runs.started:
        by_team.setdefault(monitor.team_id, []).append(monitor)
    for monitors in by_team.values():
        record_each(actor, monitors[0].team, Kind.MONITOR_RUN, monitors)
