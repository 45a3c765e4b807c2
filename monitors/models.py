"""Teams, API keys, monitors and their targets.

Domain behaviour about one monitor lives on Monitor; questions about many
monitors live on MonitorQuerySet. Cross-model workflows (running checks,
delivering notifications) live in plain modules under checks/.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import secrets
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.db.models import Case, F, Q, When
from django.urls import reverse
from django.utils import timezone

from monitors import rules, search_provider
from monitors import schedule as schedules
from monitors.judging import judge_available
from monitors.target_kinds import TargetKind, kind_for

# How long a rotated-out webhook secret keeps signing next to the new one, so
# receivers verifying the Standard Webhooks signature can switch over.
WEBHOOK_SECRET_GRACE = timedelta(hours=24)
# Characters of a webhook secret left visible after masking: enough to tell
# two secrets apart after a rotation, far too few to forge a signature.
SECRET_VISIBLE_TAIL = 4
KEY_PREFIX = "pw_"
# The part of a key after "pw_" that is stored in clear and indexed for lookup.
KEY_LOOKUP_LENGTH = 12
# Bytes of randomness in a feed link's token (43 URL-safe characters): the
# token is the only credential a feed reader can send.
FEED_TOKEN_BYTES = 32
FEED_TOKEN_MAX_LENGTH = 64


def new_feed_token() -> str:
    return secrets.token_urlsafe(FEED_TOKEN_BYTES)


def feed_link(route: str, token: str) -> str:
    """A feed's address, from PUBLIC_BASE_URL like every link given out."""
    return settings.PUBLIC_BASE_URL + reverse(route, args=[token])


class TeamQuerySet(models.QuerySet["Team"]):
    def with_feed(self, token: str) -> Team | None:
        """The team whose feed link ends in `token`, while its feeds are on;
        found through team_feed_token_unique."""
        return self.filter(feed_token=token, feeds_enabled=True).first()


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
    # The zone a team's digests keep their time of day in.
    time_zone = models.CharField(max_length=64, default="UTC")
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

    def set_feeds_enabled(self, enabled: bool) -> None:
        """Turn every feed of the team on or off. Links are kept: turned on
        again, the same links work again (renew them if one was shared)."""
        self.feeds_enabled = enabled
        Team.objects.filter(pk=self.pk).update(feeds_enabled=enabled)

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


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def active(self) -> ApiKeyQuerySet:
        return self.filter(revoked_at__isnull=True)


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
        return self.scope == self.Scope.WRITE

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


class MonitorQuerySet(models.QuerySet["Monitor"]):
    def alive(self) -> MonitorQuerySet:
        return self.filter(deleted_at__isnull=True)

    def for_team(self, team: Team) -> MonitorQuerySet:
        return self.alive().filter(team=team)

    def check_ended(
        self,
        check_id: uuid.UUID,
        now: datetime,
        summary: dict[str, int] | None = None,
        noise: int = 0,
    ) -> int:
        """Bookkeeping when one of their checks ended: lastRunAt counts every
        finished check, skipped ones too (as Firecrawl does); lastCheckSummary only
        checks that looked at pages; currentCheckId is cleared only while it
        still points at that check."""
        fields: dict[str, Any] = {
            "last_run_at": now,
            "current_check_id": Case(
                When(current_check_id=check_id, then=None),
                default=F("current_check_id"),
            ),
        }
        if summary is not None:
            fields["last_check_summary"] = summary
            fields["last_check_noise"] = noise
        return self.update(**fields)

    def due(self, now: datetime) -> MonitorQuerySet:
        """Active monitors whose next run has come; served by monitor_due_idx."""
        return self.alive().filter(status=Monitor.Status.ACTIVE, next_run_at__lte=now)

    def with_feed(self, token: str) -> Monitor | None:
        """The live monitor whose feed link ends in `token`, while its team
        has feeds on (with its team); found through monitor_feed_token_unique."""
        return (
            self.alive()
            .select_related("team")
            .filter(feed_token=token, team__feeds_enabled=True)
            .first()
        )


class Monitor(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active"
        PAUSED = "paused"

    class WebhookPages(models.TextChoices):
        """Which pages get a `monitor.page` webhook event. Firecrawl sends one
        for every page, unchanged ones included; that stays the default (and
        the API's), the dashboard and admin offer the quieter choice."""

        ALL = "all", "Every page, unchanged ones included"
        CHANGED = "changed", "Only pages that changed (new or changed)"

    class FetchWith(models.TextChoices):
        """How the monitor's pages are loaded (the API's `fetchWith`, a
        Pagewatch extension): the browser only where needed, or always one way."""

        AUTO = "auto", "Automatically: a browser only for pages that need one"
        HTTP = "http", "Always a plain download (fastest; never a browser)"
        BROWSER = "browser", "Always in a real browser (slower; sees what scripts show)"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="monitors")
    name = models.CharField(max_length=256)
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.ACTIVE
    )
    schedule_cron = models.CharField(max_length=128)
    schedule_timezone = models.CharField(max_length=64, default="UTC")
    # The shortest gap between two runs, set with the schedule (set_schedule):
    # what credit estimates and unchangedPagesFree go by.
    run_interval_minutes = models.PositiveIntegerField(null=True, blank=True)
    next_run_at = models.DateTimeField(null=True, blank=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    current_check_id = models.UUIDField(null=True, blank=True)
    goal = models.TextField(null=True, blank=True)
    judge_enabled = models.BooleanField(default=False)
    # The noise rule: lines of a page matching any entry (text, or /regex/)
    # are ignored before comparing and judging (checks.content.noise).
    ignore_lines = models.JSONField(default=list, blank=True)
    fetch_with = models.CharField(
        "how pages are loaded",
        max_length=8,
        choices=FetchWith.choices,
        default=FetchWith.AUTO,
    )
    webhook = models.JSONField(null=True, blank=True)
    webhook_pages = models.CharField(
        "page events for",
        max_length=16,
        choices=WebhookPages.choices,
        default=WebhookPages.ALL,
    )
    notification = models.JSONField(default=dict, blank=True)
    channels = models.ManyToManyField(
        "Channel", through="MonitorChannel", related_name="monitors", blank=True
    )
    retention_days = models.PositiveSmallIntegerField(default=30)
    last_check_summary = models.JSONField(null=True, blank=True)
    # Of the last check's changed pages, how many the judge called not
    # meaningful (Check.noise), so the list can tell them apart.
    last_check_noise = models.PositiveIntegerField(default=0)
    # The credential in the address of the monitor's Atom feed (feed_url).
    feed_token = models.CharField(
        max_length=FEED_TOKEN_MAX_LENGTH, default=new_feed_token, editable=False
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    objects = MonitorQuerySet.as_manager()
    # (cron, minutes) for rows without run_interval_minutes; not a field.
    _interval_cache: tuple[str, int] | None = None

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # Used by checks.dispatch.dispatch_due_monitors via Monitor.objects.due():
            # only active, live monitors are ever due, so the index stays small.
            models.Index(
                fields=["next_run_at"],
                name="monitor_due_idx",
                condition=Q(status="active", deleted_at__isnull=True),
            ),
            models.Index(fields=["team", "-created_at"], name="monitor_team_list_idx"),
        ]
        constraints = [
            # Looked up by MonitorQuerySet.with_feed on every feed request.
            models.UniqueConstraint(
                fields=["feed_token"], name="monitor_feed_token_unique"
            )
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return f"/monitors/{self.pk}/"

    @property
    def schedule(self) -> schedules.Schedule:
        return schedules.Schedule(self.schedule_cron, self.schedule_timezone)

    @property
    def is_active(self) -> bool:
        return self.status == self.Status.ACTIVE

    def next_run_after(self, moment: datetime) -> datetime | None:
        if not self.is_active:
            return None
        return schedules.next_run_after(self.schedule, moment)

    def refresh_next_run(self, now: datetime) -> None:
        self.next_run_at = self.next_run_after(now)

    def pause(self) -> None:
        self.status = self.Status.PAUSED
        self.next_run_at = None

    def resume(self, now: datetime) -> None:
        self.status = self.Status.ACTIVE
        self.next_run_at = self.next_run_after(now)

    @property
    def feed_url(self) -> str | None:
        """The monitor's Atom feed of changes; None while its team has feeds
        off. Reads the team: lists select it with the monitors."""
        if not self.team.feeds_enabled:
            return None
        return feed_link("monitor-feed", self.feed_token)

    def renew_feed_token(self) -> str:
        """A new feed link: the old one answers 404 from now on."""
        self.feed_token = new_feed_token()
        Monitor.objects.filter(pk=self.pk).update(feed_token=self.feed_token)
        return self.feed_token

    def soft_delete(self, now: datetime) -> None:
        self.deleted_at = now
        self.next_run_at = None
        self.save(update_fields=["deleted_at", "next_run_at", "updated_at"])

    @property
    def judging(self) -> bool:
        """Whether checks judge this monitor's changes (judging on, with a
        goal). Without a configured model the judge fails open: its changes
        are reported "not judged", and cost nothing (see credits_judged)."""
        return self.judge_enabled and bool(self.goal)

    @property
    def credits_judged(self) -> bool:
        """Judging that can run, and so is counted in the estimate."""
        return self.judging and judge_available()

    def set_schedule(self, cron: str, zone: str, now: datetime) -> None:
        self.schedule_cron = cron
        self.schedule_timezone = zone
        self.run_interval_minutes = schedules.shortest_interval_minutes(cron, now)
        self.refresh_next_run(now)

    def interval_minutes(self, now: datetime) -> int:
        """How often the schedule runs at most, in minutes (see
        schedules.shortest_interval_minutes): stored when the schedule is set,
        since walking a cron expression for every monitor was most of what
        listing monitors cost. Rows without it (made before it was stored, or
        straight through the ORM) work it out once per instance."""
        if self.run_interval_minutes is not None:
            return self.run_interval_minutes
        if self._interval_cache is None or self._interval_cache[0] != (
            self.schedule_cron
        ):
            minutes = schedules.shortest_interval_minutes(self.schedule_cron, now)
            self._interval_cache = (self.schedule_cron, minutes)
        return self._interval_cache[1]

    def unchanged_pages_free(self, now: datetime) -> bool:
        threshold = settings.UNCHANGED_PAGES_FREE_MIN_INTERVAL
        return self.interval_minutes(now) >= threshold

    @property
    def target_list(self) -> list[Target]:
        """The monitor's targets in order: the plain list a page of monitors
        was given (Prefetch(..., to_attr="listed_targets"), which spares a
        queryset per monitor), else through the relation."""
        listed: list[Target] | None = getattr(self, "listed_targets", None)
        return listed if listed is not None else list(self.targets.all())

    @property
    def needs_browser(self) -> bool:
        """Whether some of its pages can only be loaded in a browser: it is
        set to always use one, or a target's options need one."""
        if self.fetch_with == self.FetchWith.BROWSER:
            return True
        return any(
            rules.browser_options(t.scrape_options or {}) for t in self.target_list
        )

    def estimated_credits_per_run(self) -> int:
        # Targets checks skip (types not supported yet) cost nothing.
        return sum(
            t.estimated_credits(judging=self.credits_judged)
            for t in self.target_list
            if t.is_checked
        )

    def estimated_credits_per_month(self, now: datetime) -> int:
        runs = math.ceil(30 * 24 * 60 / max(self.interval_minutes(now), 1))
        return self.estimated_credits_per_run() * runs

    @property
    def email_settings(self) -> dict[str, Any]:
        return (self.notification or {}).get("email") or {}

    def sync_email_recipients(self) -> None:
        """Reconcile subscription rows with notification.email.recipients.

        Existing rows are kept as they are, so removing and re-adding an
        address neither re-sends a confirmation nor undoes an unsubscribe.
        """
        wanted = [r.lower() for r in self.email_settings.get("recipients") or []]
        members = self.team.member_emails()
        existing = set(self.email_recipients.values_list("email", flat=True))
        for email in wanted:
            if email in existing:
                continue
            is_member = email in members
            EmailRecipient.objects.create(
                monitor=self,
                email=email,
                status=EmailRecipient.Status.CONFIRMED
                if is_member
                else EmailRecipient.Status.PENDING,
                source=EmailRecipient.Source.TEAM
                if is_member
                else EmailRecipient.Source.OPT_IN,
                confirmed_at=timezone.now() if is_member else None,
            )

    def recipient_subscriptions(self) -> list[EmailRecipient]:
        wanted = {r.lower() for r in self.email_settings.get("recipients") or []}
        if not wanted:
            return []  # no query: lists prefetch only monitors with recipients
        return [r for r in self.email_recipients.all() if r.email in wanted]


class Target(models.Model):
    class Type(models.TextChoices):
        SCRAPE = "scrape"
        CRAWL = "crawl"
        SEARCH = "search"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    monitor = models.ForeignKey(
        Monitor, on_delete=models.CASCADE, related_name="targets"
    )
    position = models.PositiveSmallIntegerField(default=0)
    type = models.CharField(max_length=16, choices=Type.choices)
    # scrape
    urls = models.JSONField(default=list, blank=True)
    # crawl
    url = models.URLField(max_length=2048, blank=True)
    crawl_options = models.JSONField(default=dict, blank=True)
    # scrape and crawl
    scrape_options = models.JSONField(default=dict, blank=True)
    # search
    queries = models.JSONField(default=list, blank=True)
    search_window = models.CharField(max_length=8, blank=True)
    max_results = models.PositiveSmallIntegerField(null=True, blank=True)
    include_domains = models.JSONField(default=list, blank=True)
    exclude_domains = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["position", "created_at"]

    def __str__(self) -> str:
        return f"{self.type} target of {self.monitor_id}"

    @property
    def kind(self) -> TargetKind | None:
        """The class that knows this type of target (monitors.target_kinds);
        None for a type no kind is registered for (saved, never run)."""
        return kind_for(self.type)

    @property
    def not_run_reason(self) -> str:
        """Why checks do not run this target, "" when they do."""
        kind = self.kind
        if kind is None:
            return f"{self.type.capitalize()} targets are not supported yet."
        return kind.unavailable()

    @property
    def not_run_words(self) -> str:
        """not_run_reason for the dashboard: plain words, no setting names."""
        return search_provider.in_plain_words(self.not_run_reason)

    @property
    def is_checked(self) -> bool:
        return not self.not_run_reason

    def goal_version(self, goal: str | None) -> str:
        """A search target's goalVersion: editing the goal or the queries
        makes the verdicts given under the previous one stale."""
        shape = {"goal": (goal or "").strip(), "queries": sorted(self.queries or [])}
        encoded = json.dumps(shape, sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(encoded).hexdigest()[:16]

    def credits_per_page(self) -> int:
        kind = self.kind
        return kind.credits_per_page(self) if kind is not None else 0

    def page_budget(self) -> int:
        kind = self.kind
        return kind.page_budget(self) if kind is not None else 0

    def estimated_credits(self, *, judging: bool) -> int:
        kind = self.kind
        return kind.estimated_credits(self, judging=judging) if kind else 0


class EmailRecipient(models.Model):
    """One address's consent to receive a monitor's e-mails."""

    class Status(models.TextChoices):
        PENDING = "pending"
        CONFIRMED = "confirmed"
        UNSUBSCRIBED = "unsubscribed"

    class Source(models.TextChoices):
        TEAM = "team"
        OPT_IN = "opt_in"
        LEGACY = "legacy"

    monitor = models.ForeignKey(
        Monitor, on_delete=models.CASCADE, related_name="email_recipients"
    )
    email = models.EmailField(max_length=254)
    status = models.CharField(max_length=16, choices=Status.choices)
    source = models.CharField(max_length=16, choices=Source.choices)
    confirmation_sent_at = models.DateTimeField(null=True, blank=True)
    confirmed_at = models.DateTimeField(null=True, blank=True)
    unsubscribed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["email"]
        constraints = [
            models.UniqueConstraint(
                fields=["monitor", "email"], name="unique_recipient_per_monitor"
            )
        ]

    def __str__(self) -> str:
        return f"{self.email} ({self.status})"


class ImportRunQuerySet(models.QuerySet["ImportRun"]):
    def ended_before(self, cutoff: datetime) -> ImportRunQuerySet:
        """Runs nobody needs any more: finished, or previewed and never
        confirmed, before the cutoff. A queued or running import is kept."""
        return self.filter(created_at__lt=cutoff).exclude(
            status__in=[ImportRun.Status.QUEUED, ImportRun.Status.RUNNING]
        )


class ImportRun(models.Model):
    """One import into a team: the planned items a preview showed (each the
    create body it becomes, or why not), then, once confirmed, how far the
    import has got and its report. Large imports run as a task that claims
    the row (queued → running) with a conditional update."""

    class Status(models.TextChoices):
        PREVIEWED = "previewed"
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="imports")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    source = models.CharField(max_length=32)
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.PREVIEWED
    )
    # monitors.moving.base.Planned.to_state() of every item, in order.
    items = models.JSONField(default=list)
    # Refs of the duplicates chosen to be imported all the same.
    chosen_duplicates = models.JSONField(default=list, blank=True)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    report = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = ImportRunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"import from {self.source} into {self.team} ({self.status})"

    def get_absolute_url(self) -> str:
        return f"/import/{self.pk}/"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 100

    def claim(self) -> bool:
        """queued → running, for exactly one worker."""
        claimed = ImportRun.objects.filter(
            pk=self.pk, status=self.Status.QUEUED
        ).update(status=self.Status.RUNNING)
        if claimed:
            self.status = self.Status.RUNNING
        return bool(claimed)

    def record_progress(self, done: int) -> None:
        ImportRun.objects.filter(pk=self.pk).update(done=done)
        self.done = done

    def finish(self, report: dict[str, Any], now: datetime) -> None:
        self.status, self.report, self.finished_at = self.Status.DONE, report, now
        self.done = self.total
        self.save(update_fields=["status", "report", "finished_at", "done"])

    def fail(self, message: str, now: datetime) -> None:
        self.status, self.error, self.finished_at = self.Status.FAILED, message, now
        self.save(update_fields=["status", "error", "finished_at"])


class ChannelQuerySet(models.QuerySet["Channel"]):
    def for_team(self, team: Team) -> ChannelQuerySet:
        return self.filter(team=team)

    def shared(self) -> ChannelQuerySet:
        """Channels a team manages on the Channels page; a monitor's own
        channels (its Firecrawl `webhook`, `notification.email` and
        `notification.slack`, checks.notify.own) live with the monitor."""
        return self.filter(owner_monitor__isnull=True)

    def digest_due(self, now: datetime) -> ChannelQuerySet:
        """Digest channels whose next digest has come (checks.notify.digests)."""
        return self.exclude(digest="").filter(next_digest_at__lte=now)


class Channel(models.Model):
    """Somewhere a team is told about its monitors: one kind (a class in
    checks.notify.kinds) and that kind's settings, linked to many monitors.

    `settings` holds secrets (tokens, Apprise URLs); they are written, never
    shown again: the API and the dashboard show the kind's masked form."""

    class Event(models.TextChoices):
        MEANINGFUL = "meaningful", "meaningful changes"
        CHANGE = "change", "every change"
        FAILING = "failing", "a monitor failing, and recovering"

    class Digest(models.TextChoices):
        NONE = "", "at once"
        DAILY = "daily", "a daily digest"
        WEEKLY = "weekly", "a weekly digest"

    DEFAULT_EVENTS = (Event.MEANINGFUL, Event.FAILING)
    FAILING_AFTER_DEFAULT = 3

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="channels")
    # Set on a monitor's own channel (made from its Firecrawl fields); such a
    # channel goes when its monitor goes.
    owner_monitor = models.ForeignKey(
        "Monitor",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="own_channels",
    )
    name = models.CharField(max_length=120)
    kind = models.CharField(max_length=32)
    settings = models.JSONField(default=dict, blank=True)
    events = models.JSONField(default=list, blank=True)
    digest = models.CharField(
        max_length=8, choices=Digest.choices, default=Digest.NONE, blank=True
    )
    # Local time of day in the team's zone (Team.time_zone) the digest goes.
    digest_at = models.TimeField(null=True, blank=True)
    # When the digest's period started and when it is due; None = no digest.
    digest_since = models.DateTimeField(null=True, blank=True)
    next_digest_at = models.DateTimeField(null=True, blank=True)
    failing_after = models.PositiveSmallIntegerField(default=FAILING_AFTER_DEFAULT)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ChannelQuerySet.as_manager()

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            # One own channel per Firecrawl field: checks.notify.own makes
            # them with get_or_create, which relies on this.
            models.UniqueConstraint(
                fields=["owner_monitor", "kind"],
                condition=Q(owner_monitor__isnull=False),
                name="one_own_channel_per_kind",
            ),
        ]
        indexes = [
            # Used by checks.notify.digests.queue_due_digests.
            models.Index(
                fields=["next_digest_at"],
                name="channel_digest_due_idx",
                condition=~Q(digest=""),
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return f"/channels/{self.pk}/"

    def wants(self, event: str) -> bool:
        return event in (self.events or [])


class MonitorChannel(models.Model):
    """A monitor sending to a channel, and whether that channel was told the
    monitor is failing (so it is told once when it starts and once when it
    recovers, never once per failure)."""

    monitor = models.ForeignKey(Monitor, on_delete=models.CASCADE)
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE)
    failing_since = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["monitor", "channel"], name="unique_monitor_channel"
            )
        ]

    def __str__(self) -> str:
        return f"{self.monitor_id} -> {self.channel_id}"
