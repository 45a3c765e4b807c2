"""Notification seam between the check runner and the delivery outbox.

The runner calls these inside the transaction that records a page result or
finishes a check, so an outbox row is written atomically with the event it
announces (implemented by the notifications work: webhooks and e-mail)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from checks.models import Check, PageResult


def on_page_result(page: PageResult) -> None:
    """A page result was recorded (called in the same transaction)."""


def on_check_finished(check: Check) -> None:
    """A check reached a finished state, skipped ones included (same transaction)."""
