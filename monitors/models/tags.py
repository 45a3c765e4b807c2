"""Tags: short names a team gives its monitors to group them ("Competitors",
"Black Friday"), to list, pause or send a group at once.

A tag belongs to its team; its name is unique in the team whatever its case
(the first spelling stays). What a tag may be is monitors.rules' to say."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import models
from django.db.models.functions import Lower

from monitors import rules
from monitors.models.teams import Team


class TagQuerySet(models.QuerySet["Tag"]):
    def for_team(self, team: Team) -> TagQuerySet:
        return self.filter(team=team)

    def in_use(self) -> TagQuerySet:
        """Tags some live monitor has, by name (the list's tag selector)."""
        return (
            self.filter(monitors__deleted_at__isnull=True).distinct().order_by("name")
        )

    def named(self, team: Team, names: Iterable[str]) -> list[Tag]:
        """The team's tags with these names (any case), made for the names it
        has none for yet; in the order given. Names are cleaned first
        (rules.clean_tags). Two requests making the same new tag at once are
        fine: the second insert is ignored and both read the one row."""
        wanted = rules.clean_tags(names)
        if not wanted:
            return []
        # A team has tens of tags: matched here, as SQLite's LOWER() folds
        # only ASCII letters.
        have = {tag.name.lower(): tag for tag in self.filter(team=team)}
        # Sorted, so two requests inserting the same new names in opposite
        # orders take PostgreSQL's index locks in one order, not a deadlock.
        missing = sorted(
            (name for name in wanted if name.lower() not in have), key=str.lower
        )
        if missing:
            Tag.objects.bulk_create(
                [Tag(team=team, name=name) for name in missing], ignore_conflicts=True
            )
            have = {tag.name.lower(): tag for tag in self.filter(team=team)}
        return [have[name.lower()] for name in wanted if name.lower() in have]

    def find(self, team: Team, name: str) -> Tag | None:
        """The team's tag of that name, any case; None when it has none."""
        return self.filter(team=team, name__iexact=name.strip()).first()


class Tag(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="tags")
    name = models.CharField(max_length=rules.TAG_NAME_MAX)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = TagQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            # One "Competitors" per team, however it is typed; also what
            # TagQuerySet.named's insert-or-ignore relies on.
            models.UniqueConstraint(
                "team", Lower("name"), name="tag_name_unique_per_team"
            )
        ]

    def __str__(self) -> str:
        return self.name
