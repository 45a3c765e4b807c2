"""What the dashboard's list and the admin tell the person after a run of
many (monitors.running.run_each), as (message level, words), in plain
words."""

from __future__ import annotations

from django.contrib import messages

from monitors.dashboard.base import QUEUE_DOWN_WORDS
from monitors.running import Runs


def said(runs: Runs) -> list[tuple[int, str]]:
    """How many checks started, which monitors were left alone and why."""
    if runs.queue_down and not runs.started and not runs.failed:
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
    if runs.failed:
        names = "; ".join(f"“{m.name}”" for m in runs.failed)
        words.append(
            (
                messages.ERROR,
                f"Could not be started: {names}. Please try again in a moment.",
            )
        )
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
