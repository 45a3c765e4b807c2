"""Moments in plain words, counted from now: "in 12 minutes", "3 hours ago".

The dashboard's `relative` filter says them, and so does the sentence that
tells when a failed message is tried again (checks.notify.transports)."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone


def relative(moment: datetime | None) -> str:
    """ "in 12 minutes", "3 hours ago", "just now"."""
    if moment is None:
        return ""
    delta = moment - timezone.now()
    seconds = int(delta.total_seconds())
    future = seconds > 0
    seconds = abs(seconds)
    if seconds < 45:
        return "in a few seconds" if future else "just now"
    if seconds < 90 * 60:
        count, unit = max(1, round(seconds / 60)), "minute"
    elif seconds < 36 * 3600:
        count, unit = round(seconds / 3600), "hour"
    else:
        count, unit = round(seconds / 86400), "day"
    words = f"{count} {unit}{'s' if count != 1 else ''}"
    return f"in {words}" if future else f"{words} ago"
