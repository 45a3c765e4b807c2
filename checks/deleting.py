"""Deleting monitors, teams and channels for good, with everything they recorded: the
admin's delete (the dashboard and the API only mark a monitor deleted).

Django's delete() reads into Python every row it cascades to that it cannot
delete in one statement, and page results and deliveries are such rows (their
links to captures and their attempts keep them off its fast path): a monitor
with 200 checks of 500 pages took seconds to delete, past the web server's
time-out for a longer history. So the long tables go first, a few statements
each (CheckQuerySet.discard), and delete() then takes what is left: a handful
of rows per monitor, and the relations it keeps itself (the activity log's
entries let go of the monitor and keep its name, channel links).
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import QuerySet

from checks import storage
from checks.models import Check, Delivery
from monitors.models import Channel, Monitor, Team


def delete_monitors(monitors: QuerySet[Monitor]) -> None:
    with transaction.atomic():
        rows = list(monitors.values_list("pk", "team_id"))
        ids = [pk for pk, _ in rows]
        Check.objects.filter(monitor__in=ids).discard()
        # A test message or a consent e-mail belongs to no check.
        Delivery.objects.filter(monitor__in=ids).discard()
        Monitor.objects.filter(pk__in=ids).delete()
        storage.forget_team_usage(team_id for _, team_id in rows)


def delete_teams(teams: QuerySet[Team]) -> None:
    with transaction.atomic():
        ids = list(teams.values_list("pk", flat=True))
        delete_monitors(Monitor.objects.filter(team__in=ids))
        # A digest speaks of many monitors and belongs to none of them.
        Delivery.objects.filter(channel__team__in=ids).discard()
        Team.objects.filter(pk__in=ids).delete()


def delete_channels(channels: QuerySet[Channel]) -> None:
    with transaction.atomic():
        ids = list(channels.values_list("pk", flat=True))
        Delivery.objects.filter(channel__in=ids).discard()
        Channel.objects.filter(pk__in=ids).delete()
