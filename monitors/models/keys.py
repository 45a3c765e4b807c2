"""API keys: a team's credentials for the API."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from monitors.models.teams import Membership, Team, weaker_role

KEY_PREFIX = "pw_"
# The part of a key after "pw_" that is stored in clear and indexed for lookup.
KEY_LOOKUP_LENGTH = 12


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def active(self) -> ApiKeyQuerySet:
        return self.filter(revoked_at__isnull=True)

    def with_makers_role(self) -> ApiKeyQuerySet:
        """Each key with its maker's current role in its team (`makers_role`,
        None when they are not in it), read in the same query, so `acting_as`
        costs the API's every request no query of its own."""
        role = Membership.objects.filter(
            team_id=OuterRef("team_id"), user_id=OuterRef("created_by_id")
        ).values("role")[:1]
        return self.annotate(makers_role=Subquery(role))

    def revoke(self) -> list[ApiKey]:
        """Revoke the active keys among these; returns them, revoked."""
        keys = list(self.active())
        now = timezone.now()
        for key in keys:
            key.revoked_at = now
        ApiKey.objects.filter(pk__in=[key.pk for key in keys]).update(revoked_at=now)
        return keys


class ApiKey(models.Model):
    """Only a SHA-256 of the key is stored; keys carry 256 bits of randomness,
    so a fast hash is enough and lookups stay cheap on every request."""

    class Scope(models.TextChoices):
        READ = "read", "Read only: list and read monitors, checks and activity"
        WRITE = "write", "Read and write: create, change, run and delete too"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, blank=True)
    # Indexed clear-text prefix: finds the row without scanning hashes.
    prefix = models.CharField(max_length=KEY_LOOKUP_LENGTH, unique=True)
    key_hash = models.CharField(max_length=64)
    scope = models.CharField(max_length=8, choices=Scope.choices, default=Scope.WRITE)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.display_prefix} ({self.name or 'unnamed'})"

    @property
    def display_prefix(self) -> str:
        return f"{KEY_PREFIX}{self.prefix}…"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @property
    def can_write(self) -> bool:
        """What the key was made for (its scope); what it may do now is
        `acting_as`'s to say."""
        return self.scope == self.Scope.WRITE

    def acting_as(self) -> Membership | None:
        """The member this key acts as now, read at each request: its maker in
        their current role in the team, lowered to what the scope allows (a
        read key reads as a viewer does). Someone made an editor or a viewer
        keeps the keys they made, so the role they had when making one must
        not be what it acts with. A key no person made (`createapikey`), or
        one a site administrator outside the team made in the admin, acts by
        its scope alone. None (the key does not work) when its maker is no
        longer in the team: leaving revokes their keys, and a membership
        ended any other way must not leave one working."""
        ceiling = SCOPE_CEILINGS[self.Scope(self.scope)]
        maker = self.created_by
        if maker is None:
            return Membership(team_id=self.team_id, role=ceiling)
        if hasattr(self, "makers_role"):  # read with the key (with_makers_role)
            role = self.makers_role
        else:
            role = (
                Membership.objects.filter(team_id=self.team_id, user=maker)
                .values_list("role", flat=True)
                .first()
            )
        if role is None:
            if not maker.is_staff:
                return None
            role = ceiling
        return Membership(
            team_id=self.team_id, user=maker, role=weaker_role(role, ceiling)
        )

    @staticmethod
    def hash_key(raw: str) -> str:
        return hashlib.sha256(raw.encode()).hexdigest()

    @classmethod
    def issue(
        cls,
        team: Team,
        name: str = "",
        created_by: Any = None,
        scope: str = Scope.WRITE,
    ) -> tuple[ApiKey, str]:
        """Create a key and return it with the raw secret, which is never stored."""
        key = cls(team=team, name=name, scope=cls.Scope(scope), created_by=created_by)
        raw = key.new_secret()
        key.save()
        return key, raw

    def new_secret(self) -> str:
        """Give an unsaved key its secret: the lookup prefix and hash are set
        and the raw key is returned, to be shown once and never stored."""
        raw = KEY_PREFIX + secrets.token_urlsafe(32)
        self.prefix = raw[len(KEY_PREFIX) : len(KEY_PREFIX) + KEY_LOOKUP_LENGTH]
        self.key_hash = self.hash_key(raw)
        return raw

    def matches(self, raw: str) -> bool:
        return secrets.compare_digest(self.key_hash, self.hash_key(raw))

    def revoke(self) -> None:
        if self.revoked_at is None:
            self.revoked_at = timezone.now()
            self.save(update_fields=["revoked_at"])

    def touch(self, now: datetime) -> None:
        # At most one write a minute per key: last use is informative, and a
        # write on every request would serialise a busy integration.
        if self.last_used_at is None or now - self.last_used_at > timedelta(minutes=1):
            ApiKey.objects.filter(pk=self.pk).update(last_used_at=now)
            self.last_used_at = now


# The most a key of each scope may do, whoever made it.
SCOPE_CEILINGS: dict[ApiKey.Scope, Membership.Role] = {
    ApiKey.Scope.READ: Membership.Role.VIEWER,
    ApiKey.Scope.WRITE: Membership.Role.OWNER,
}
