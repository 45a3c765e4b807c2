"""How a team grows (invitations) and what it remembers (activity).

Teams and memberships themselves live in monitors.models; what each role may
do is Membership.can().
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, models, transaction

from monitors.models import Membership, Team

INVITATION_VALID_FOR = timedelta(days=7)


class InvitationError(Exception):
    """An invitation link that cannot be used, with the reason in plain words."""


class InvitationQuerySet(models.QuerySet["Invitation"]):
    def pending(self, now: datetime) -> InvitationQuerySet:
        return self.filter(
            accepted_at__isnull=True, revoked_at__isnull=True, expires_at__gt=now
        )


class Invitation(models.Model):
    """An owner's invitation for one e-mail address to join with a role.

    Only a SHA-256 of the link's token is stored, like API keys: whoever reads
    the database cannot join a team with it."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField(max_length=254)
    role = models.CharField(
        max_length=16,
        choices=Membership.Role.choices,
        default=Membership.Role.EDITOR,
    )
    token_hash = models.CharField(max_length=64, unique=True)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = InvitationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.email} to {self.team} as {self.role}"

    def get_absolute_url(self) -> str:
        return f"/settings/team/invitations/{self.pk}/"

    @staticmethod
    def hash_token(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    @classmethod
    def issue(
        cls, team: Team, email: str, role: str, invited_by: Any, now: datetime
    ) -> tuple[Invitation, str]:
        """A new invitation and the token of its link, which is never stored."""
        token = secrets.token_urlsafe(32)
        invitation = cls.objects.create(
            team=team,
            email=email.strip().lower(),
            role=Membership.Role(role),
            token_hash=cls.hash_token(token),
            invited_by=invited_by,
            expires_at=now + INVITATION_VALID_FOR,
        )
        return invitation, token

    @classmethod
    def for_token(cls, token: str) -> Invitation | None:
        if not token or len(token) > 100:
            return None
        return (
            cls.objects.select_related("team", "invited_by")
            .filter(token_hash=cls.hash_token(token))
            .first()
        )

    def role_label(self) -> str:
        return Membership.Role(self.role).label

    def is_pending(self, now: datetime) -> bool:
        return (
            self.accepted_at is None
            and self.revoked_at is None
            and now < self.expires_at
        )

    def unusable_reason(self, now: datetime) -> str:
        """Why the link cannot be used now, "" when it can."""
        if self.accepted_at is not None:
            return "This invitation has already been used."
        if self.revoked_at is not None:
            return "This invitation was withdrawn by the team's owner."
        if now >= self.expires_at:
            return (
                "This invitation has expired: invitations work for "
                f"{INVITATION_VALID_FOR.days} days. Ask the team's owner for a new one."
            )
        return ""

    def revoke(self, now: datetime) -> bool:
        """Withdraw a pending invitation; False when it was not pending."""
        changed = Invitation.objects.filter(
            pk=self.pk, accepted_at__isnull=True, revoked_at__isnull=True
        ).update(revoked_at=now)
        if changed:
            self.revoked_at = now
        return bool(changed)

    def accept(self, user: Any, now: datetime) -> Membership:
        """Use the invitation for `user`: once only, claimed with a conditional
        update so two clicks (or two people) cannot both use it. Someone
        already in the team keeps the role they have."""
        with transaction.atomic():
            claimed = (
                Invitation.objects.filter(pk=self.pk)
                .pending(now)
                .update(accepted_at=now, accepted_by=user)
            )
            if not claimed:
                self.refresh_from_db()
                raise InvitationError(
                    self.unusable_reason(now) or "This invitation cannot be used."
                )
            try:
                with transaction.atomic():
                    membership, _ = Membership.objects.get_or_create(
                        team=self.team, user=user, defaults={"role": self.role}
                    )
            except IntegrityError:  # joined in a parallel request
                membership = Membership.objects.get(team=self.team, user=user)
        self.accepted_at, self.accepted_by = now, user
        return membership
