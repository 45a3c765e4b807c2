"""Notifications: webhooks and e-mails, delivered through an outbox.

The package's modules, from the bottom up: `events` (webhook payloads),
`signing` (webhook signatures), `emails` (messages and consent tokens),
`transports` (what an attempt comes to: Sent or DeliveryError), `kinds` (one
class per kind of channel, the registry, the monitor's own webhook and e-mail
included), `own` (a monitor's Firecrawl fields as its own channels),
`messages` (what a team's channels are told), `outbox` (queueing rows after
commit), `status` (a check's notificationStatus), `deliveries` (the rows a
recorded event writes), `channels` (a team's channels' rows), `digests`,
`drain` (claiming rows, sending them side by side, recording attempts),
`sweep` (retries and lost messages) and `tasks` (thin Celery tasks over
`drain` and `sweep`, queued by name so nothing imports them).

What the engine calls is here: the runner calls these inside the transaction
that records a page result or finishes a check, so an outbox row is written
atomically with the event it announces; `outbox` queues it after commit, a
finished check's rows as one task that sends them side by side.
Nothing here touches the network, so the runner's transaction stays short.

A monitor whose notifications are muted (Monitor.muted_until) tells nobody:
`muted` below is the one place that decides it, for its own webhook and
e-mail and for every linked channel. It reads the mute the check started
with (Check.notifications_muted, set when it leaves the queue), not the
monitor's now, so a mute or unmute while a check runs changes nothing of
it; deliveries queued before a mute still go, retries included. The check
is recorded as usual; its notificationStatus says `muted`, and digests
leave its changes out, those of a check still running too (a muted change
is never sent). Failing alerts are not looked at while muted: the
first failed check after the mute ends counts the failures in a row, those
made while muted too, so a monitor still failing is told of once then; one
that failed and recovered while muted is told nothing. Test messages are
not events of a check, and still go.

`models` (the outbox's rows) is loaded with the app's models, through this
package: so this package imports nothing at load, and the two calls below
import their modules when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from checks.models import Check, PageResult


def muted(check: Check) -> bool:
    """Whether the check's events go to no one: its monitor's mute as it was
    when the check started (Check.notifications_muted), so a check's events
    are all told or all not, whoever mutes or unmutes while it runs."""
    return check.notifications_muted


def on_page_result(page: PageResult) -> None:
    """A page result was recorded (called in the same transaction)."""
    from checks.notify import deliveries

    if muted(page.check_run):
        return
    deliveries.record_page_result(page)


def on_check_finished(check: Check, *, write: bool = True) -> None:
    """A check reached a finished state, skipped ones included (same transaction).

    Also sets check.notification_status: on the instance, and in the row
    unless `write` is False (the caller then saves it with the check)."""
    from checks.notify import channels, deliveries, outbox

    if muted(check):
        deliveries.record_muted(check, write=write)
        return
    with outbox.together():
        deliveries.record_check_finished(check, write=write)
        channels.record_check(check)
