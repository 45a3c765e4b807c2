from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.text import slugify

from monitors.models import ApiKey, Team
from teams.activity import Actor, Kind, record

# Enough to spot a typo; an installation with more teams has the admin.
TEAMS_LISTED = 20


class Command(BaseCommand):
    help = (
        "Create an API key for a team (with --create-team, the team too). "
        "The key is the last line printed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--team", required=True, help="Team slug")
        parser.add_argument("--name", default="", help="A label for the key")
        parser.add_argument(
            "--scope",
            choices=ApiKey.Scope.values,
            default=ApiKey.Scope.WRITE,
            help="read: lists and reads only; write (the default): changes too",
        )
        parser.add_argument(
            "--create-team",
            action="store_true",
            help="Create the team when no team has this slug",
        )

    def handle(
        self,
        *args: Any,
        team: str,
        name: str,
        scope: str,
        create_team: bool,
        **options: Any,
    ) -> None:
        limit = ApiKey._meta.get_field("name").max_length
        if len(name) > limit:  # the database refused it with a traceback
            raise CommandError(f"--name can be at most {limit} characters.")
        team_obj = self._team(team, create=create_team)
        key, raw = ApiKey.issue(team_obj, name=name, scope=scope)
        record(Actor.command(), team_obj, Kind.KEY_CREATED, name=name, scope=scope)
        self.stderr.write(
            f"Created {key.get_scope_display().split(':')[0].lower()} API key "
            f"{key.display_prefix} for team '{team_obj.slug}'. "
            "It is shown once; store it now."
        )
        self.stdout.write(raw)

    def _team(self, given: str, *, create: bool) -> Team:
        # A mistyped slug used to create a second team silently, whose key then
        # saw none of the monitors it was meant for.
        slug = slugify(given)[:64]
        if not slug:
            raise CommandError("--team needs a slug with letters or digits.")
        team = Team.objects.filter(slug=slug).first()
        if team is not None:
            return team
        if create:
            name = given.strip()[: Team._meta.get_field("name").max_length]
            team = Team.objects.create(slug=slug, name=name)
            self.stderr.write(f"Created team '{slug}'.")
            return team
        raise CommandError(no_such_team(slug))


def no_such_team(slug: str) -> str:
    teams = list(Team.objects.order_by("slug").values_list("slug", "name"))
    if not teams:
        return f"There are no teams yet. Add --create-team to create the team '{slug}'."
    listed = ", ".join(f"{s} ({n})" for s, n in teams[:TEAMS_LISTED])
    more = f" and {len(teams) - TEAMS_LISTED} more" if len(teams) > TEAMS_LISTED else ""
    return (
        f"No team has the slug '{slug}'. Existing teams: {listed}{more}. "
        f"Check the spelling, or add --create-team to create '{slug}'."
    )
