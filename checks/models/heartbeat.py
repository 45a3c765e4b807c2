"""When a part of the service last showed it was alive."""

from __future__ import annotations

from datetime import datetime

from django.db import models


class Heartbeat(models.Model):
    """When a part of the service last showed it was alive, for /healthz and
    /metrics: the workers serving the check queue, and the scheduler's
    dispatch tick. One row per part, overwritten."""

    WORKER = "worker"
    SCHEDULER = "scheduler"

    name = models.CharField(max_length=32, primary_key=True)
    seen_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} at {self.seen_at:%Y-%m-%d %H:%M:%S}"

    @classmethod
    def beat(cls, name: str, now: datetime) -> None:
        cls.objects.update_or_create(name=name, defaults={"seen_at": now})

    @classmethod
    def last_seen(cls) -> dict[str, datetime]:
        return dict(cls.objects.values_list("name", "seen_at"))
