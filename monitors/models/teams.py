"""Teams and their members: who may do what, the team's webhook signing
secret, and its feed links."""

from __future__ import annotations

import base64
import secrets
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.urls import reverse
from django.utils import timezone

from monitors.links import public_url

# How long a rotated-out webhook secret keeps signing next to the new one, so
# receivers verifying the Standard Webhooks signature can switch over.
WEBHOOK_SECRET_GRACE = timedelta(hours=24)
# Characters of a webhook secret left visible after masking: enough to tell
# two secrets apart after a rotation, far too few to forge a signature.
SECRET_VISIBLE_TAIL = 4
# Bytes of randomness in a feed link's token (43 URL-safe characters): the
# token is the only credential a feed reader can send.
FEED_TOKEN_BYTES = 32
FEED_TOKEN_MAX_LENGTH = 64


def new_feed_token() -> str:
    return secrets.token_urlsafe(FEED_TOKEN_BYTES)


def feed_link(route: str, token: str) -> str:
    """A feed's address, from PUBLIC_BASE_URL like every link given out."""
    return public_url(reverse(route, args=[token]))


class TeamQuerySet(models.QuerySet["Team"]):
    def with_feed(self, token: str) -> Team | None:
        """The team whose feed link ends in `token`, while its feeds are on;
        found through team_feed_token_unique."""
        return self.filter(feed_token=token, feeds_enabled=True).first()

    def left_ownerless_by(self, *users: Any) -> TeamQuerySet:
        """The teams whose only owners are `users`, which their accounts'
        deletion must wait for: with others in the team (`has_others`) it
        would leave them nobody who may invite, change roles or hand
        ownership on; alone in it, a team of nobody whose monitors go on
        checking and e-mailing (the Team page sends such an owner to an
        administrator to delete the team). The one rule of the admin's
        confirmation page and of a deletion any other way. The owner rows
        are read locked (PostgreSQL), as Membership.remove reads them, so
        two owners going at once cannot both pass."""
        going = {user.pk for user in users}
        theirs = Membership.objects.filter(user__in=going, role=Membership.Role.OWNER)
        owners = Membership.objects.select_for_update().filter(
            team__in=theirs.values("team"), role=Membership.Role.OWNER
        )
        kept: set[Any] = set()
        teams: set[Any] = set()
        for team_id, user_id in owners.values_list("team_id", "user_id"):
            teams.add(team_id)
            if user_id not in going:
                kept.add(team_id)
        others = Membership.objects.filter(team=models.OuterRef("pk")).exclude(
            user__in=going
        )
        return self.filter(pk__in=teams - kept).annotate(
            has_others=models.Exists(others)
        )

    def left_ownerless_by_switching_off(self, user: Any) -> TeamQuerySet:
        """left_ownerless_by for `user`'s account being switched off, with the
        accounts of their teams already switched off counted as gone too: an
        owner who cannot sign in manages nothing, and `has_others` then means
        someone else in the team who can still sign in. Only `user`'s own
        teams, and those with others only where `user` is an owner: the
        others switched off are counted gone in every team they are in, so
        without this a team `user` is not in, or one they never owned (whose
        owners were switched off before), would be said to lose them."""
        theirs = Membership.objects.filter(user=user)
        off = (
            Membership.objects.filter(
                team__in=theirs.values("team"), user__is_active=False
            )
            .exclude(user=user)
            .select_related("user")
        )
        owned = theirs.filter(role=Membership.Role.OWNER).values("team")
        return (
            self.left_ownerless_by(user, *{row.user for row in off})
            .filter(pk__in=theirs.values("team"))
            .filter(models.Q(pk__in=owned) | models.Q(has_others=False))
        )


class Team(models.Model):
    name = models.CharField(max_length=120)
    slug = models.SlugField(max_length=64, unique=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="teams"
    )
    webhook_secret = models.CharField(max_length=64, default="", blank=True)
    # The secret Rotate replaced; it still signs until the moment given.
    previous_webhook_secret = models.CharField(max_length=64, default="", blank=True)
    previous_webhook_secret_until = models.DateTimeField(null=True, blank=True)
    # None means unlimited; a number is the credits a team may spend per month.
    credit_allowance = models.PositiveIntegerField(null=True, blank=True)
    # How long the team's activity log is kept (teams.models.Activity).
    activity_retention_days = models.PositiveIntegerField(default=365)
    # Everyone signing in with a password must use a second factor
    # (teams.second_factor).
    require_second_factor = models.BooleanField(default=False)
    # The Atom feeds of changes (the team's and each monitor's): on unless the
    # team turns them off, which makes every feed link of the team answer 404.
    feeds_enabled = models.BooleanField("feeds on", default=True)
    feed_token = models.CharField(
        max_length=FEED_TOKEN_MAX_LENGTH, default=new_feed_token, editable=False
    )
    # The zone a team's digests keep their time of day in (monitors.clock's
    # team_zone). Empty until the team picks one: its clock is UTC meanwhile,
    # and a new monitor's form may offer the browser's zone instead, which a
    # team that picked UTC must not be offered.
    time_zone = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    objects = TeamQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            # Looked up by TeamQuerySet.with_feed on every feed request.
            models.UniqueConstraint(
                fields=["feed_token"], name="team_feed_token_unique"
            )
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def feed_url(self) -> str | None:
        """The team's feed of changes; None while the team has feeds off."""
        if not self.feeds_enabled:
            return None
        return feed_link("team-feed", self.feed_token)

    def renew_feed_token(self) -> str:
        """A new feed link: the old one answers 404 from now on."""
        self.feed_token = new_feed_token()
        Team.objects.filter(pk=self.pk).update(feed_token=self.feed_token)
        return self.feed_token

    def set_feeds_enabled(self, enabled: bool) -> bool:
        """Turn every feed of the team on or off; whether that changed
        anything (a conditional update: of two clicks, one turns them).
        Links are kept: turned on again, the same links work again (renew
        them if one was shared)."""
        self.feeds_enabled = enabled
        changed = (
            Team.objects.filter(pk=self.pk)
            .exclude(feeds_enabled=enabled)
            .update(feeds_enabled=enabled)
        )
        return bool(changed)

    @property
    def counts_credits(self) -> bool:
        """Whether credits mean anything to this team: only a team with a
        monthly allowance is shown them (a self-hosted team pays nobody)."""
        return self.credit_allowance is not None

    def member_emails(self) -> set[str]:
        return {
            email.lower()
            for email in self.members.exclude(email="").values_list("email", flat=True)
        }

    @staticmethod
    def new_webhook_secret() -> str:
        # The Standard Webhooks format (whsec_ + base64 of the key bytes), so
        # their libraries verify our webhook-signature as-is (docs/webhooks.md).
        return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()

    def ensure_webhook_secret(self) -> str:
        """The team's webhook secret, minting one if it has none yet.

        A conditional update, so two requests or workers minting the first
        secret of a team at once agree on a single one."""
        if not self.webhook_secret:
            Team.objects.filter(pk=self.pk, webhook_secret="").update(
                webhook_secret=self.new_webhook_secret()
            )
            self.refresh_from_db(fields=["webhook_secret"])
        return self.webhook_secret

    def rotate_webhook_secret(self, now: datetime | None = None) -> str:
        """A new secret at once; the one it replaces keeps signing for
        WEBHOOK_SECRET_GRACE. Rotating again meanwhile retires the older one.

        The row is locked (PostgreSQL) so two rotations cannot both keep the
        same previous secret and lose the one in between."""
        now = now or timezone.now()
        with transaction.atomic():
            current = (
                Team.objects.select_for_update()
                .values_list("webhook_secret", flat=True)
                .get(pk=self.pk)
            )
            fields: dict[str, Any] = {"webhook_secret": self.new_webhook_secret()}
            if current:
                fields |= {
                    "previous_webhook_secret": current,
                    "previous_webhook_secret_until": now + WEBHOOK_SECRET_GRACE,
                }
            Team.objects.filter(pk=self.pk).update(**fields)
        for name, value in fields.items():
            setattr(self, name, value)
        return self.webhook_secret

    def previous_webhook_secret_signs(self, now: datetime) -> bool:
        until = self.previous_webhook_secret_until
        return bool(self.previous_webhook_secret) and until is not None and now < until

    @property
    def previous_webhook_secret_signs_until(self) -> datetime | None:
        """When the rotated-out secret stops signing; None once it has."""
        if self.previous_webhook_secret_signs(timezone.now()):
            return self.previous_webhook_secret_until
        return None

    @staticmethod
    def mask_webhook_secret(secret: str) -> str:
        return "whsec_…" + secret[-SECRET_VISIBLE_TAIL:] if secret else ""

    @property
    def masked_webhook_secret(self) -> str:
        return self.mask_webhook_secret(self.webhook_secret)

    def webhook_signing_secrets(self, now: datetime) -> list[str]:
        """The secrets a delivery is signed with now: the current one first,
        then the rotated-out one while its grace period lasts."""
        secrets_now = [self.webhook_secret] if self.webhook_secret else []
        if self.previous_webhook_secret_signs(now):
            secrets_now.append(self.previous_webhook_secret)
        return secrets_now


class LastOwnerError(Exception):
    """A change that would leave a team without an owner."""

    message = (
        "A team always keeps at least one owner: make someone else an owner first."
    )


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        EDITOR = "editor", "Editor"
        VIEWER = "viewer", "Viewer"

    class Action(models.TextChoices):
        """What a person may do in a team; each role allows a set of them
        (ROLE_ACTIONS). Views ask for one with monitors.dashboard.base.team_view."""

        VIEW = "view", "see the team's monitors, checks and settings"
        EDIT = "edit", "create, change, pause, run or delete monitors"
        MANAGE = (
            "manage",
            ("manage members, invitations, API keys and the webhook signing secret"),
        )

    team = models.ForeignKey(Team, on_delete=models.CASCADE)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.EDITOR)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "user"], name="unique_membership")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.team}"

    def can(self, action: str) -> bool:
        return action in ROLE_ACTIONS[self.Role(self.role)]

    @property
    def permissions(self) -> dict[str, bool]:
        """{"view": True, "edit": False, ...}: what templates ask (`can.edit`)."""
        return {action.value: self.can(action) for action in self.Action}

    @property
    def role_words(self) -> str:
        """ "an owner", "an editor", "a viewer": the role in a sentence."""
        label = self.Role(self.role).label.lower()
        return ("an " if label[0] in "aeiou" else "a ") + label

    def _is_last_owner(self) -> bool:
        """Whether this member is the team's only owner, read with the team's
        owner rows locked (PostgreSQL) so two owners demoting each other at
        once cannot both succeed."""
        owners = Membership.objects.select_for_update().filter(
            team_id=self.team_id, role=self.Role.OWNER
        )
        return list(owners.values_list("pk", flat=True)) == [self.pk]

    def change_role(self, role: str) -> None:
        """Give this member `role`; refused when it would leave no owner."""
        role = self.Role(role)
        with transaction.atomic():
            if role != self.Role.OWNER and self._is_last_owner():
                raise LastOwnerError(LastOwnerError.message)
            self.role = role
            self.save(update_fields=["role"])

    def remove(self) -> None:
        """Take this person out of the team; refused for the last owner."""
        with transaction.atomic():
            if self._is_last_owner():
                raise LastOwnerError(LastOwnerError.message)
            self.delete()


ROLE_ACTIONS: dict[Membership.Role, frozenset[str]] = {
    Membership.Role.OWNER: frozenset(Membership.Action.values),
    Membership.Role.EDITOR: frozenset({Membership.Action.VIEW, Membership.Action.EDIT}),
    Membership.Role.VIEWER: frozenset({Membership.Action.VIEW}),
}


def weaker_role(first: str, second: str) -> Membership.Role:
    """The role of the two that may do less (each role's actions include
    those of the roles below it)."""
    roles = (Membership.Role(first), Membership.Role(second))
    return min(roles, key=lambda role: len(ROLE_ACTIONS[role]))
