"""Run now: start a check of one monitor, or of many, and log it. One
workflow for the monitor's page and POST /v2/monitor/{id}/run, the list's
bulk "Check now" and POST /v2/monitor/bulk's run, and the admin's action.

Each monitor goes through checks.dispatch.queue_manual_check, which locks
its row and refuses it while paused or while a check is in flight, so a run
of many starts nothing a single run would not; credits and the AI
allowance are then the runner's, as for any check. When the task queue
cannot take a check, nothing more is tried: the broker is down for the rest
too."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.contrib import messages

from checks.dispatch import QueueUnavailable, RunRefused, queue_manual_check
from checks.models import Check
from monitors.models import Monitor
from teams.activity import Actor, Kind, record

PAUSED = "MONITOR_PAUSED"
QUEUE_DOWN_WORDS = (
    "Pagewatch cannot reach its task queue right now. Please try again in a moment."
)


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

    @property
    def left(self) -> list[Monitor]:
        return self.paused + self.running + self.gone + self.queue_down


def run_each(monitors: Iterable[Monitor], actor: Actor) -> Runs:
    """Start a check of each of `monitors` (already scoped to the caller's
    team), one at a time, as run_one does."""
    runs = Runs()
    pending = list(monitors)
    for index, monitor in enumerate(pending):
        try:
            runs.started[monitor] = run_one(monitor, actor)
        except RunRefused as refused:
            (runs.paused if refused.code == PAUSED else runs.running).append(monitor)
        except Monitor.DoesNotExist:
            runs.gone.append(monitor)
        except QueueUnavailable:
            runs.queue_down = pending[index:]
            break
    return runs


def said(runs: Runs) -> list[tuple[int, str]]:
    """What the dashboard and the admin tell the person, as (message level,
    words): how many checks started, which monitors were left alone and why,
    in plain words."""
    if runs.queue_down and not runs.started:
        return [(messages.ERROR, QUEUE_DOWN_WORDS)]
    count = len(runs.started)
    words = [
        (messages.SUCCESS, f"Started a check of {_monitors(count)}.")
        if count
        else (messages.WARNING, "No check was started.")
    ]
    reasons = [
        *(f"“{m.name}” is paused (resume it first)" for m in runs.paused),
        *(f"“{m.name}” is already running a check" for m in runs.running),
        *(f"“{m.name}” is deleted" for m in runs.gone),
    ]
    if reasons:
        words.append((messages.WARNING, f"Left alone: {'; '.join(reasons)}."))
    if runs.queue_down:
        words.append(
            (
                messages.ERROR,
                f"{_monitors(len(runs.queue_down))} not started: {QUEUE_DOWN_WORDS}",
            )
        )
    return words


def _monitors(count: int) -> str:
    return f"{count} monitor{'s' if count != 1 else ''}"
