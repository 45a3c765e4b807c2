from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from monitors.models import Team
from monitors.moving.exporting import export_csv, export_document


class Command(BaseCommand):
    help = (
        "Print a team's monitors as one JSON document (targets, schedules, "
        "goals, rules, notification settings; no secrets), or as CSV."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--team", required=True, help="Team slug")
        parser.add_argument("--csv", action="store_true", help="One row per page")

    def handle(self, *args: Any, team: str, csv: bool, **options: Any) -> None:
        found = Team.objects.filter(slug=team).first()
        if found is None:
            raise CommandError(f"No team has the slug {team!r}.")
        if csv:
            self.stdout.write(export_csv(found), ending="")
            return
        document = export_document(found, timezone.now())
        self.stdout.write(json.dumps(document, indent=2, ensure_ascii=False))
