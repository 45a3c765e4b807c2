"""`manage.py storage`: the monitors whose history takes the most room."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.template.defaultfilters import filesizeformat

from checks.storage import biggest_monitors
from monitors.models import Monitor, Team


class Command(BaseCommand):
    help = (
        "List the monitors whose history (page results, diffs and snapshots) "
        "takes the most room in the database, biggest first, deleted monitors "
        "included until retention removes them."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--team", default="", help="Only this team (its slug)")
        parser.add_argument("--top", type=int, default=10, help="How many (10)")

    def handle(self, *args: Any, team: str, top: int, **options: Any) -> None:
        if top < 1:
            raise CommandError("--top must be at least 1.")
        # Deleted monitors too: they keep their history until retention ends it.
        monitors = Monitor.objects.all()
        if team:
            found = Team.objects.filter(slug=team).first()
            if found is None:
                raise CommandError(f"No team has the slug {team!r}.")
            monitors = monitors.filter(team=found)
        usages = biggest_monitors(monitors.select_related("team"), top)
        if not usages:
            self.stdout.write("No monitors.")
            return
        self.stdout.write(f"{'Total':>10}  {'Snapshots':>10}  {'Results':>10}  Monitor")
        for usage in usages:
            monitor = usage.monitor
            self.stdout.write(
                f"{filesizeformat(usage.total):>10}  "
                f"{filesizeformat(usage.snapshot_bytes):>10}  "
                f"{filesizeformat(usage.results_bytes):>10}  "
                f"{monitor.name} ({monitor.team.slug}, {monitor.pk}){_gone(monitor)}"
            )


def _gone(monitor: Monitor) -> str:
    goes_at = monitor.history_goes_at
    if goes_at is None:
        return ""
    return f", deleted, its history goes on {goes_at:%Y-%m-%d}"
