from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from monitors.models import ApiKey, Team


class Command(BaseCommand):
    help = (
        "Create an API key for a team (the team is created if missing). "
        "The key is the last line printed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--team", required=True, help="Team slug")
        parser.add_argument("--name", default="", help="A label for the key")

    def handle(self, *args: Any, team: str, name: str, **options: Any) -> None:
        team_obj = Team.get_or_create_by_slug(team)
        key, raw = ApiKey.issue(team_obj, name=name)
        self.stderr.write(
            f"Created API key {key.display_prefix} for team '{team_obj.slug}'. "
            "It is shown once; store it now."
        )
        self.stdout.write(raw)
