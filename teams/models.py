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
from django.contrib.auth import get_user_model
from django.db import IntegrityError, models, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.db.models.fields.json import KT
from django.urls import get_script_prefix
from django.utils import timezone

from monitors.models import Membership, Team

INVITATION_VALID_FOR = timedelta(days=7)
# Former members the Team page names in its notice to renew the feed links; a
# team that lost more since the last renewal needs the button, not a roll call.
GONE_NAMED = 10


class InvitationError(Exception):
    """An invitation link that cannot be used, with the reason in plain words."""


class InvitationQuerySet(models.QuerySet["Invitation"]):
    def pending(self, now: datetime) -> InvitationQuerySet:
        return self.filter(
            accepted_at__isnull=True, revoked_at__isnull=True, expires_at__gt=now
        )

    def spend_for(self, team: Team, user: Any, now: datetime) -> int:
        """Spend `team`'s invitations still waiting for `user`'s address: they
        are in the team (by one of them, the admin or single sign-on), and
        the team page would list them as waiting for someone already in it,
        their links usable by whoever else opens them."""
        if not user.email:
            return 0
        waiting = self.pending(now).filter(team=team, email__iexact=user.email)
        return waiting.update(accepted_at=now, accepted_by=user)

    def lapsed(self, now: datetime, team: Team) -> InvitationQuerySet:
        """Invitations of `team` that expired unused and still need the owner's
        eye: not followed by a newer invitation to the same address, and the
        person did not join some other way."""
        newer = Invitation.objects.filter(
            team=OuterRef("team"),
            email__iexact=OuterRef("email"),
            pk__gt=OuterRef("pk"),
        )
        return (
            self.filter(
                team=team,
                accepted_at__isnull=True,
                revoked_at__isnull=True,
                expires_at__lte=now,
            )
            .exclude(Exists(newer))
            .exclude(email__in=team.member_emails())
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

    # Set by issue(): whether a link still waiting for the address stopped
    # working because of this one (the owner is told so).
    replaced_waiting = False

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.email} to {self.team} as {self.role}"

    def get_absolute_url(self) -> str:
        return f"{get_script_prefix()}settings/team/invitations/{self.pk}/"

    @staticmethod
    def hash_token(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    @classmethod
    def issue(
        cls, team: Team, email: str, role: str, invited_by: Any, now: datetime
    ) -> tuple[Invitation, str]:
        """A new invitation and the token of its link, which is never stored.
        It replaces any still waiting for the same address: an older link,
        perhaps with another role, must not stay usable beside it."""
        token = secrets.token_urlsafe(32)
        email = email.strip().lower()
        replaced = (
            cls.objects.pending(now)
            .filter(team=team, email__iexact=email)
            .update(revoked_at=now)
        )
        invitation = cls.objects.create(
            team=team,
            email=email,
            role=Membership.Role(role),
            token_hash=cls.hash_token(token),
            invited_by=invited_by,
            expires_at=now + INVITATION_VALID_FOR,
        )
        invitation.replaced_waiting = bool(replaced)
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

    @property
    def role_words(self) -> str:
        """ "an editor", "a viewer": the role in a sentence, as a member's."""
        return Membership(role=self.role).role_words

    def is_for(self, user: Any) -> bool:
        """Whether `user` is the person invited: the link was sent to one
        address, and whoever else holds it (a forwarded mail, a shared
        screen) must not join with their own account."""
        return bool(user.email) and user.email.strip().lower() == self.email.lower()

    @property
    def masked_email(self) -> str:
        """The address as told to an account that is not it: enough for the
        invitee to recognise ("s***@example.com"), not to learn it whole."""
        name, _, domain = self.email.partition("@")
        return f"{name[:1]}***@{domain}"

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

    def issue_again(self, invited_by: Any, now: datetime) -> tuple[Invitation, str]:
        """A fresh invitation to the same address with the same role; this one
        stays as it is (expired), now followed by the new one."""
        return Invitation.issue(self.team, self.email, self.role, invited_by, now)

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
        if not self.is_for(user):
            raise InvitationError(
                f"This invitation was sent to {self.masked_email}: only that "
                "address can use it. Ask the team's owner for an invitation to yours."
            )
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
            # Other invitations of the team to this address are spent too: the
            # team page would list them as waiting for someone already in it.
            same_address = Invitation.objects.filter(
                team=self.team, email__iexact=self.email
            )
            same_address.pending(now).update(accepted_at=now, accepted_by=user)
        self.accepted_at, self.accepted_by = now, user
        return membership


# --------------------------------------------------------------------- activity


class ActivityQuerySet(models.QuerySet["Activity"]):
    def former_members(self, team: Team) -> QuerySet[Any]:
        """The accounts this team's log says left or were removed, and that
        are not back in it: their entries stay theirs to look up."""
        names = (
            self.filter(team=team, kind=Activity.Kind.MEMBER_REMOVED)
            .annotate(member=KT("details__member"))
            .values("member")
        )
        return (
            get_user_model()
            .objects.filter(username__in=names)
            .exclude(membership__team=team)
            .order_by("username")
        )

    def gone_since_feed_links_renewed(self, team: Team) -> list[Activity]:
        """The departures of people not back in `team` since all its feed
        links were last made new, when nobody was asked to make them new:
        someone who left on their own, or was removed in the admin. An owner
        removing someone on the Team page was asked (member_remove)."""
        renewed = (
            self.filter(
                team=team,
                kind=Activity.Kind.FEED_RENEWED,
                details__has_key="monitors",
            )
            .order_by("-id")
            .values_list("id", flat=True)
            .first()
        )
        gone = self.filter(team=team, kind=Activity.Kind.MEMBER_REMOVED).exclude(
            via=Activity.Via.DASHBOARD, details__left__isnull=True
        )
        if renewed is not None:
            gone = gone.filter(id__gt=renewed)
        back = team.members.values_list("username", flat=True)
        return list(
            gone.annotate(member=KT("details__member"))
            .exclude(member__in=back)
            .order_by("id")[:GONE_NAMED]
        )

    def by_person(self, user: Any) -> ActivityQuerySet:
        """What `user` did: themselves, or through an API key they made (such
        an entry names the key, not them)."""
        return self.filter(Q(user=user) | Q(api_key__created_by=user))

    def expired(self, days: int, cutoff: datetime) -> ActivityQuerySet:
        """Entries of teams keeping activity `days` days, made before cutoff."""
        return self.filter(team__activity_retention_days=days, at__lt=cutoff)

    def page(self, before: int | None, size: int) -> list[Activity]:
        """Newest first, `size` entries older than entry `before` (a cursor, so
        page 500 costs what page 1 does), plus one more to tell if there are."""
        rows = self.order_by("-id")
        if before is not None:
            rows = rows.filter(id__lt=before)
        # The key's maker, for address_seen_by, in the same query.
        return list(rows.select_related(None).select_related("api_key")[: size + 1])


class Activity(models.Model):
    """One thing someone (or Pagewatch itself) did in a team: who, what, when,
    from where. Rows are written once and never changed; the hourly retention
    purge removes those older than the team's activity_retention_days.

    Names are copied in (user_name, key_name, monitor_name) so an entry still
    says who and what after the person, key or monitor is gone."""

    class Kind(models.TextChoices):
        MONITOR_CREATED = "monitor.created", "Monitor created"
        MONITOR_EDITED = "monitor.edited", "Monitor edited"
        MONITOR_PAUSED = "monitor.paused", "Monitor paused"
        MONITOR_RESUMED = "monitor.resumed", "Monitor resumed"
        MONITOR_RUN = "monitor.run", "Monitor run by hand"
        MONITOR_DELETED = "monitor.deleted", "Monitor deleted"
        WEBHOOK_DISABLED = "monitor.webhook_disabled", "Webhook turned off"
        CHANNEL_CREATED = "channel.created", "Channel created"
        CHANNEL_EDITED = "channel.edited", "Channel edited"
        CHANNEL_DELETED = "channel.deleted", "Channel deleted"
        KEY_CREATED = "key.created", "API key created"
        KEY_REVOKED = "key.revoked", "API key revoked"
        MEMBER_JOINED = "member.joined", "Member joined"
        MEMBER_REMOVED = "member.removed", "Member removed"
        ROLE_CHANGED = "member.role_changed", "Role changed"
        INVITATION_SENT = "invitation.sent", "Invitation sent"
        INVITATION_WITHDRAWN = "invitation.withdrawn", "Invitation withdrawn"
        SECRET_ROTATED = "team.secret_rotated", "Webhook secret replaced"
        # details: the setting (a Team field), its value and what it was.
        TEAM_EDITED = "team.edited", "Team setting changed"
        # A feed link made new, the team's or (with the monitor) a monitor's.
        FEED_RENEWED = "feed.renewed", "Feed link replaced"
        SIGNED_IN = "signin.succeeded", "Signed in"
        SIGN_IN_FAILED = "signin.failed", "Failed sign-in"
        # The code was a recovery code, not the app's: a lost (or stolen)
        # phone shows here. details: how many codes are left.
        SIGNED_IN_WITH_RECOVERY_CODE = (
            "signin.recovery_code",
            "Signed in with a recovery code",
        )
        # details: "reset" when chosen with an e-mailed reset link; the member
        # when an administrator set it.
        PASSWORD_CHANGED = "account.password_changed", "Password changed"
        SECOND_FACTOR_ON = "account.second_factor_on", "Second factor set up"
        SECOND_FACTOR_OFF = "account.second_factor_off", "Second factor turned off"
        # An administrator removed a person's recovery codes and left their
        # authenticator: details name the member and whether one is left.
        RECOVERY_CODES_REMOVED = (
            "account.recovery_codes_removed",
            "Recovery codes removed",
        )
        # Someone followed the link in a team channel's e-mail and stopped
        # getting them. details: the channel (id and name), the address and
        # whether nobody is left to get the channel's e-mails.
        CHANNEL_LEFT = "channel.left", "Stopped a channel's e-mails"
        # An address outside the team followed the link in the confirmation
        # e-mail: the monitor's e-mails go to it from now on. details: the
        # address.
        EMAIL_CONFIRMED = (
            "monitor.email_confirmed",
            "Confirmed a monitor's e-mails",
        )
        # An address a monitor e-mails followed the unsubscribe link in one.
        # details: the address.
        EMAIL_UNSUBSCRIBED = (
            "monitor.email_unsubscribed",
            "Unsubscribed from a monitor's e-mails",
        )

    class Via(models.TextChoices):
        DASHBOARD = "dashboard", "the dashboard"
        API = "api", "the API"
        ADMIN = "admin", "the administration"
        COMMAND = "command", "a management command"
        SYSTEM = "system", "Pagewatch itself"
        # A link in an e-mail, followed by whoever holds the e-mail: the
        # actor is named by the address it went to (user_name).
        EMAIL = "email", "an e-mail link"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="activity")
    at = models.DateTimeField(default=timezone.now)
    kind = models.CharField(max_length=32, choices=Kind.choices)
    via = models.CharField(max_length=16, choices=Via.choices)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    user_name = models.CharField(max_length=150, blank=True)
    api_key = models.ForeignKey(
        "monitors.ApiKey",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    key_name = models.CharField(max_length=120, blank=True)
    monitor = models.ForeignKey(
        "monitors.Monitor",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="activity",
    )
    monitor_name = models.CharField(max_length=256, blank=True)
    # What else the entry says: changed fields, roles, an e-mail address,
    # the system's reason.
    details = models.JSONField(default=dict, blank=True)
    address = models.GenericIPAddressField(null=True, blank=True)

    objects = ActivityQuerySet.as_manager()

    class Meta:
        # Newest first by id (ids grow with time): the pages' cursor.
        ordering = ["-id"]
        verbose_name_plural = "activity"
        indexes = [
            # The team's Activity page and GET /v2/activity (ActivityQuerySet.
            # page), unfiltered and by each filter; the monitor page's latest.
            models.Index(fields=["team", "-id"], name="activity_team_idx"),
            models.Index(
                fields=["team", "monitor", "-id"], name="activity_monitor_idx"
            ),
            models.Index(fields=["team", "user", "-id"], name="activity_user_idx"),
            models.Index(fields=["team", "kind", "-id"], name="activity_kind_idx"),
            # The hourly retention purge (ActivityQuerySet.expired).
            models.Index(fields=["at"], name="activity_at_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} by {self.actor_words} at {self.at}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        # The log is a record of what happened: written once, never edited.
        if not self._state.adding:
            raise ValueError("Activity entries are never changed.")
        super().save(*args, **kwargs)

    @property
    def actor_words(self) -> str:
        """Who did it, as the dashboard says it."""
        if self.via == self.Via.SYSTEM:
            return "Pagewatch"
        if self.via == self.Via.API:
            return _named("API key", self.key_name)
        if self.via == self.Via.COMMAND and not self.user_name:
            return "a management command"
        name = self.user_name or "someone"
        return f"{name} (administration)" if self.via == self.Via.ADMIN else name

    @property
    def departure_words(self) -> str:
        """A member's leaving, for the Team page: "eddie left the team"."""
        d = self.details or {}
        name = d.get("member") or self.user_name or "someone"
        if d.get("left"):
            return f"{name} left the team"
        if d.get("account_deleted"):
            return f"{name}'s account was deleted"
        return f"{name} was removed from the team"

    def address_seen_by(self, membership: Membership) -> str | None:
        """The address it came from, for an owner (who manages the members)
        or the person who did it, themselves or through an API key they made
        (an entry made through a key names no person); None for the other
        members: where someone signs in from is theirs, and a lead for
        whoever wants their account."""
        if membership.can(Membership.Action.MANAGE):
            return self.address
        if membership.user_id is None:  # a key no person made
            return None
        key_maker = self.api_key.created_by_id if self.api_key else None
        if membership.user_id in (self.user_id, key_maker):
            return self.address
        return None

    @property
    def sentence(self) -> str:
        """The entry as the monitor page says it: "Paused by Ana"."""
        what = "Run" if self.kind == self.Kind.MONITOR_RUN else self.what_words
        if self.via == self.Via.SYSTEM:
            return f"{what}, by Pagewatch itself"
        if self.via == self.Via.EMAIL:
            # "olive@example.com stopped the e-mails of channel “Ops”, …"
            return (
                f"{self.actor_words} {what[:1].lower()}{what[1:]}, "
                "with the link in an e-mail"
            )
        return f"{what} by {self.actor_words}"

    @property
    def what_words(self) -> str:
        """What was done, as a sentence without its subject: "Paused",
        "Edited the name and schedule", "Made Ana an editor"."""
        d = self.details or {}
        kind = self.Kind
        words = {
            kind.MONITOR_CREATED: "Created",
            kind.MONITOR_PAUSED: "Paused",
            kind.MONITOR_RESUMED: "Resumed",
            kind.MONITOR_RUN: "Run by hand",
            kind.MONITOR_DELETED: "Deleted",
            kind.SIGNED_IN: "Signed in",
            kind.SECRET_ROTATED: "Replaced the webhook signing secret",
            kind.SECOND_FACTOR_ON: "Set up a second factor",
        }
        if self.kind == kind.PASSWORD_CHANGED and d.get("member"):
            return f"Set a new password for {d['member']}"
        if self.kind == kind.PASSWORD_CHANGED and d.get("reset"):
            return "Chose a new password with the reset link e-mailed to them"
        if self.kind == kind.PASSWORD_CHANGED:
            return "Changed their password"
        if self.kind == kind.SECOND_FACTOR_OFF and d.get("member"):
            # An administrator removed the person's lost authenticator.
            return f"Removed {d['member']}'s authenticator: their second factor is off"
        if self.kind == kind.SECOND_FACTOR_OFF:
            return "Turned off their second factor"
        if self.kind == kind.RECOVERY_CODES_REMOVED:
            left = ": only their authenticator app is left" if d.get("app_left") else ""
            return f"Removed {d.get('member', 'someone')}'s recovery codes{left}"
        if self.kind == kind.MONITOR_DELETED and d.get("for_good"):
            # In the admin: its history went with it, not kept out of sight.
            return "Deleted for good with its history"
        if self.kind == kind.MONITOR_CREATED and d.get("imported"):
            return f"Imported from {d['source']}" if d.get("source") else "Imported"
        if self.kind == kind.MONITOR_EDITED and d.get("unmuted"):
            return "Unmuted notifications"
        if self.kind == kind.MONITOR_EDITED and d.get("muted_until"):
            return f"Muted notifications until {d.get('until') or d['muted_until']}"
        if self.kind in words:
            return words[self.kind]
        if self.kind == kind.MONITOR_EDITED:
            fields = d.get("fields") or []
            return "Edited " + listed(fields) if fields else "Saved, unchanged"
        if self.kind == kind.TEAM_EDITED:
            return _team_setting_words(d)
        if self.kind == kind.FEED_RENEWED and "monitors" in d:
            count = d["monitors"]
            if not count:
                return "Replaced the team's feed link"
            theirs = "its monitor" if count == 1 else f"its {count} monitors"
            return f"Replaced the team's feed link and those of {theirs}"
        if self.kind == kind.FEED_RENEWED and self.monitor_name:
            return "Replaced its feed link"
        if self.kind == kind.FEED_RENEWED:
            return "Replaced the team's feed link"
        if self.kind == kind.WEBHOOK_DISABLED:
            return f"Turned off its webhook: {d.get('reason', '')}".rstrip(": ")
        if self.kind in (
            kind.CHANNEL_CREATED,
            kind.CHANNEL_EDITED,
            kind.CHANNEL_DELETED,
        ):
            verb = {
                kind.CHANNEL_CREATED: "Added",
                kind.CHANNEL_EDITED: "Changed",
                kind.CHANNEL_DELETED: "Deleted",
            }[self.kind]
            said = f"{verb} the channel “{d.get('name') or 'unnamed'}”"
            if d.get("replaced"):
                # Where its messages go changed (a new webhook or Apprise URL).
                said += " and replaced its secret address"
            return said
        if self.kind == kind.KEY_CREATED:
            scope = "read-only" if d.get("scope") == "read" else "read and write"
            return "Created " + _named(f"{scope} API key", d.get("name"))
        if self.kind == kind.KEY_REVOKED and d.get("member"):
            return (
                "Revoked "
                + _named("API key", d.get("name"))
                + f" made by {d['member']}, whose account was deleted"
            )
        if self.kind == kind.KEY_REVOKED:
            return "Revoked " + _named("API key", d.get("name"))
        # How they came in when no invitation did: "through single sign-on".
        through = f" through {d['through']}" if d.get("through") else ""
        if self.kind == kind.MEMBER_JOINED and d.get("member"):
            return f"Added {d['member']} as {role_words(d.get('role'))}{through}"
        if self.kind == kind.MEMBER_JOINED and d.get("email"):
            return (
                f"Joined as {role_words(d.get('role'))} through the invitation "
                f"sent to {d['email']}"
            )
        if self.kind == kind.MEMBER_JOINED:
            return f"Joined as {role_words(d.get('role'))}{through}"
        revoked = d.get("keys_revoked") or 0
        if self.kind == kind.MEMBER_REMOVED and d.get("left"):
            said = "Left the team"
            if revoked:
                was = "was" if revoked == 1 else "were"
                said += f"; {keys_made_words(revoked, 'they')} {was} revoked"
            return said
        if self.kind == kind.MEMBER_REMOVED:
            said = f"Removed {d.get('member', 'a member')} from the team"
            if revoked:
                said += " and revoked " + keys_made_words(revoked, "they")
            if d.get("account_deleted"):
                said += ": their account was deleted"
            return said
        if self.kind == kind.ROLE_CHANGED:
            said = (
                f"Made {d.get('member', 'a member')} {role_words(d.get('role'))} "
                f"(was {role_words(d.get('was'))})"
            )
            said += through
            if revoked:
                said += " and revoked " + keys_made_words(revoked, "they", writes=True)
            return said
        if self.kind == kind.INVITATION_SENT:
            return f"Invited {d.get('email', '')} as {role_words(d.get('role'))}"
        if self.kind == kind.INVITATION_WITHDRAWN:
            return f"Withdrew the invitation for {d.get('email', '')}"
        if self.kind == kind.SIGNED_IN_WITH_RECOVERY_CODE:
            return f"Signed in with a recovery code ({d.get('left')} left)"
        if self.kind == kind.SIGN_IN_FAILED:
            return "Failed to sign in (wrong password or locked out)"
        if self.kind == kind.CHANNEL_LEFT:
            said = f"Stopped the e-mails of channel “{d.get('name') or 'unnamed'}”"
            if d.get("nobody_left"):
                said += ": nobody gets them now"
            return said
        if self.kind == kind.EMAIL_CONFIRMED:
            return f"Confirmed the e-mails of monitor “{self.monitor_name}”"
        if self.kind == kind.EMAIL_UNSUBSCRIBED and self.via == self.Via.ADMIN:
            # An administrator acting for the address, not its own link.
            return (
                f"Stopped the e-mails of monitor “{self.monitor_name}” "
                f"to {d.get('email') or 'an address'}"
            )
        if self.kind == kind.EMAIL_UNSUBSCRIBED:
            return f"Unsubscribed from the e-mails of monitor “{self.monitor_name}”"
        return self.get_kind_display()


def _team_setting_words(d: dict[str, Any]) -> str:
    """A team setting changed, as the Activity page says it."""
    setting, value, was = d.get("setting"), d.get("value"), d.get("was")
    if setting == "name":
        return f"Renamed the team “{value}” (was “{was}”)"
    if setting == "slug":
        return f"Changed the team's slug to “{value}” (was “{was}”)"
    if setting == "credit_allowance":
        before = "unlimited" if was is None else f"{_number(was)} a month"
        if value is None:
            return f"Made the team's credits unlimited (was {before})"
        return f"Set the team's credits to {_number(value)} a month (was {before})"
    if setting == "feeds_enabled":
        if value:
            return "Turned the team's feeds on"
        return "Turned the team's feeds off: every feed link stopped working"
    if setting == "activity_retention_days":
        return f"Kept the activity log for {value} days (was {was})"
    if setting == "time_zone":
        return f"Set the team's time zone to {value} (was {was})"
    if setting == "require_second_factor":
        if value:
            return "Required a second factor of everyone who signs in with a password"
        return "Made a second factor each person's choice"
    return "Changed a team setting"


def _number(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def role_words(value: Any) -> str:
    """A role with its article, as a sentence says it: "an editor"."""
    try:
        role = Membership.Role(value)
    except ValueError:
        return "a member"
    return Membership(role=role).role_words


def keys_made_words(count: int, who: str, *, writes: bool = False) -> str:
    """The API keys a member made that leaving the team (or, with `writes`,
    becoming a viewer) turns off, named the same way in every question,
    message and log entry about them: "the API key they made", "the 2 API
    keys Eddie made that can change monitors"."""
    keys = "the API key" if count == 1 else f"the {count} API keys"
    return f"{keys} {who} made" + (" that can change monitors" if writes else "")


def keys_stop_words(
    count: int, who: str, *, writes: bool = False, done: bool = False
) -> str:
    """Those keys stopping, as a sentence without its full stop: "The API
    key they made stops working" when asked, "… no longer works" when done."""
    one = count == 1
    if done:
        verb = "no longer works" if one else "no longer work"
    else:
        verb = "stops working" if one else "stop working"
    keys = keys_made_words(count, who, writes=writes)
    return f"{keys[:1].upper()}{keys[1:]} {verb}"


def _named(thing: str, name: str | None) -> str:
    """'the API key “CI”', or 'an API key with no name' for a key left
    unnamed: “unnamed” in quotes reads as its name, and the keys page says
    "(no name)"."""
    if name:
        return f"the {thing} “{name}”"
    article = "an" if thing[0].lower() in "aeiou" else "a"
    return f"{article} {thing} with no name"


def listed(items: list[str]) -> str:
    """Items as a sentence lists them: "a, b and c"."""
    items = [str(item) for item in items]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
