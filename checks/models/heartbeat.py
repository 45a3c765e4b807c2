"""When a part of the service last showed it was alive, and which scheduler
holds the schedule."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import IntegrityError, models, transaction
from django.db.models import DateTimeField, ExpressionWrapper, Q
from django.db.models.functions import Now


def _database_now_minus(delta: timedelta) -> ExpressionWrapper:
    return ExpressionWrapper(Now() - delta, output_field=DateTimeField())


class Heartbeat(models.Model):
    """When a part of the service last showed it was alive, for /healthz and
    /metrics: the workers serving the check queue, and the scheduler's
    dispatch tick. One row per part, overwritten.

    Two more rows are the scheduler's lease (config.beat): the scheduler
    whose name `holder` says sends the periodic tasks; a second one started
    by mistake finds the lease held, stands by and records itself as the
    standby, which /healthz reports. Their times are the database's own
    clock, so schedulers on machines whose clocks disagree still agree on
    when a lease has run out."""

    WORKER = "worker"
    SCHEDULER = "scheduler"
    # A worker serving the browser queue took a batch (checks.runner).
    BROWSER = "browser"
    SCHEDULER_LEASE = "scheduler-lease"
    SCHEDULER_STANDBY = "scheduler-standby"

    name = models.CharField(max_length=32, primary_key=True)
    seen_at = models.DateTimeField()
    # Which process the row speaks for (the scheduler rows only).
    holder = models.CharField(max_length=200, blank=True, default="")

    def __str__(self) -> str:
        return f"{self.name} at {self.seen_at:%Y-%m-%d %H:%M:%S}"

    @classmethod
    def beat(cls, name: str, now: datetime) -> None:
        cls.objects.update_or_create(name=name, defaults={"seen_at": now})

    @classmethod
    def last_seen(cls) -> dict[str, datetime]:
        return dict(
            cls.objects.exclude(
                name__in=(cls.SCHEDULER_LEASE, cls.SCHEDULER_STANDBY)
            ).values_list("name", "seen_at")
        )

    @classmethod
    def hold_schedule(cls, holder: str, lease: timedelta) -> Heartbeat:
        """Take or renew the scheduler's lease for `holder`, with a
        conditional update: it is ours when we hold it, nobody does, or its
        holder has not renewed it for `lease`. Returns the lease row: held by
        someone else, `holder` is recorded as the standby."""
        expired = Q(seen_at__lt=_database_now_minus(lease))
        ours = Q(holder=holder) | Q(holder="") | expired
        taken = (
            cls.objects.filter(name=cls.SCHEDULER_LEASE)
            .filter(ours)
            .update(holder=holder, seen_at=Now())
        )
        if not taken:
            try:
                with transaction.atomic():
                    cls.objects.create(
                        name=cls.SCHEDULER_LEASE, holder=holder, seen_at=Now()
                    )
            except IntegrityError:
                pass  # it exists, held by another: read below
        row = cls.objects.get(name=cls.SCHEDULER_LEASE)
        if row.holder != holder:
            cls.objects.update_or_create(
                name=cls.SCHEDULER_STANDBY,
                defaults={"holder": holder, "seen_at": Now()},
            )
        return row

    @classmethod
    def release_schedule(cls, holder: str) -> None:
        """A scheduler that stops hands the lease back at once, so the one
        started next need not wait for it to run out."""
        cls.objects.filter(name=cls.SCHEDULER_LEASE, holder=holder).update(holder="")
        cls.objects.filter(name=cls.SCHEDULER_STANDBY, holder=holder).delete()

    @classmethod
    def second_scheduler(cls, within: timedelta) -> tuple[str, str] | None:
        """(the holder, the standby) when a second scheduler stood by within
        `within`, on the database's clock; None when only one runs."""
        fresh = cls.objects.filter(seen_at__gte=_database_now_minus(within))
        rows = dict(
            fresh.filter(
                name__in=(cls.SCHEDULER_LEASE, cls.SCHEDULER_STANDBY)
            ).values_list("name", "holder")
        )
        holder, standby = rows.get(cls.SCHEDULER_LEASE), rows.get(cls.SCHEDULER_STANDBY)
        if holder and standby and holder != standby:
            return holder, standby
        return None
