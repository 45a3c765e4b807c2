"""Monitors and their targets, and the addresses that agreed to a monitor's
e-mails.

Domain behaviour about one monitor lives on Monitor; questions about many
monitors live on MonitorQuerySet. Cross-model workflows (running checks,
delivering notifications) live in plain modules under checks/."""

from __future__ import annotations

import math
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Case, Count, F, Q, When
from django.urls import reverse
from django.utils import timezone

from monitors import rules, rules_changes, search_provider, target_kinds
from monitors import schedule as schedules
from monitors.judging import judge_available
from monitors.models.tags import Tag
from monitors.models.teams import FEED_TOKEN_MAX_LENGTH, Team, feed_link, new_feed_token
from monitors.target_kinds import TargetKind, kind_for

MUTED_FOREVER = rules.MUTED_FOREVER


class MonitorQuerySet(models.QuerySet["Monitor"]):
    def alive(self) -> MonitorQuerySet:
        return self.filter(deleted_at__isnull=True)

    def of_teams(self, team_ids: Any) -> MonitorQuerySet:
        """Every monitor of the teams, deleted ones included."""
        return self.filter(team__in=team_ids)

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

    def tagged(self, name: str) -> MonitorQuerySet:
        """Those with the tag of that name (any case)."""
        return self.filter(tags__name__iexact=name.strip())

    def changed_since(self, moment: datetime, now: datetime) -> MonitorQuerySet:
        """Those changed after `moment`: edited (their fields, targets, tags),
        paused, resumed or deleted (updated_at), or one of whose checks was
        queued, started, finished or otherwise written (which moves their
        lastRunAt, currentCheckId, nextRunAt and lastCheckSummary), or whose
        mute ended since (mutedUntil turns null then, with no write)."""
        checks = self.model._meta.get_field("checks").related_model
        written = checks.objects.changed_since(moment).values("monitor_id")
        return self.filter(
            Q(updated_at__gt=moment)
            | Q(pk__in=written)
            | Q(muted_until__gt=moment, muted_until__lte=now)
        )

    def pause(self) -> list[Monitor]:
        """Pause the active ones among these, in one update; the ones it
        paused (for the activity log)."""
        active = list(self.filter(status=Monitor.Status.ACTIVE))
        Monitor.objects.filter(
            pk__in=[m.pk for m in active], status=Monitor.Status.ACTIVE
        ).update(
            status=Monitor.Status.PAUSED, next_run_at=None, updated_at=timezone.now()
        )
        return active

    def resume(self, now: datetime) -> list[Monitor]:
        """Resume the paused ones among these; the ones it resumed. Each has
        its own next run (its schedule's), so one bulk_update writes them."""
        paused = list(self.filter(status=Monitor.Status.PAUSED))
        for monitor in paused:
            monitor.resume(now)
            monitor.updated_at = now
        Monitor.objects.bulk_update(paused, ["status", "next_run_at", "updated_at"])
        return paused

    def muted(self, now: datetime) -> MonitorQuerySet:
        """Those whose notifications are muted at `now`."""
        return self.filter(muted_until__gt=now)

    def mute(self, until: datetime, now: datetime) -> list[Monitor]:
        """Mute these until `until`, in one update (a later or earlier end
        replaces the one they had); the ones it muted or re-muted."""
        chosen = list(self.exclude(muted_until=until))
        Monitor.objects.filter(pk__in=[m.pk for m in chosen]).update(
            muted_until=until, updated_at=now
        )
        for monitor in chosen:
            monitor.muted_until = until
        return chosen

    def unmute(self, now: datetime) -> list[Monitor]:
        """End the mute of the muted ones among these; the ones it unmuted."""
        muted = list(self.muted(now))
        Monitor.objects.filter(pk__in=[m.pk for m in muted]).update(
            muted_until=None, updated_at=now
        )
        for monitor in muted:
            monitor.muted_until = None
        return muted

    def soft_delete(self, now: datetime) -> list[Monitor]:
        """Mark these deleted (Monitor.soft_delete for many); the ones it
        deleted."""
        alive = list(self.alive())
        Monitor.objects.filter(pk__in=[m.pk for m in alive]).update(
            deleted_at=now, next_run_at=None, updated_at=now
        )
        return alive

    def add_tag(self, tag: Tag) -> tuple[list[Monitor], list[Monitor]]:
        """Give these the tag, in one insert: the ones that did not have it,
        and those left without it as they have rules.MONITOR_TAGS_MAX tags
        already (one more and every later edit of them would be refused)."""
        lacking = self.exclude(tags=tag).annotate(tag_count=Count("tags"))
        tagged, full = [], []
        for monitor in lacking:
            room = monitor.tag_count < rules.MONITOR_TAGS_MAX  # type: ignore[attr-defined]
            (tagged if room else full).append(monitor)
        Monitor.tags.through.objects.bulk_create(
            [Monitor.tags.through(monitor=m, tag=tag) for m in tagged],
            ignore_conflicts=True,
        )
        _edited(tagged)
        return tagged, full

    def remove_tag(self, tag: Tag) -> list[Monitor]:
        """Take the tag off these, in one delete; the ones that had it."""
        having = list(self.filter(tags=tag))
        Monitor.tags.through.objects.filter(
            monitor__in=[m.pk for m in having], tag=tag
        ).delete()
        _edited(having)
        return having

    def renew_feed_tokens(self) -> int:
        """A new feed link for each of these monitors (each its own random
        token, so one update per row); how many were made new."""
        pks = list(self.values_list("pk", flat=True))
        for pk in pks:
            Monitor.objects.filter(pk=pk).update(feed_token=new_feed_token())
        return len(pks)

    def with_feed(self, token: str) -> Monitor | None:
        """The live monitor whose feed link ends in `token`, while its team
        has feeds on (with its team); found through monitor_feed_token_unique."""
        return (
            self.alive()
            .select_related("team")
            .filter(feed_token=token, team__feeds_enabled=True)
            .first()
        )


def _edited(monitors: list[Monitor]) -> None:
    """A change to these monitors that their own row does not hold (their
    tags) moves their updatedAt, as an edit of the row does."""
    if monitors:
        Monitor.objects.filter(pk__in=[m.pk for m in monitors]).update(
            updated_at=timezone.now()
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
    # Which changes matter, decided without the AI (the API's changeRules;
    # monitors.rules_changes): {lines, containing, appears, disappears}, or
    # null for every change. Applied by checks.content.change_rules.
    change_rules = models.JSONField("which changes matter", null=True, blank=True)
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
    # While in the future, the monitor checks and records as usual but tells
    # no channel (checks.notify); MUTED_FOREVER means until someone unmutes.
    # A past value is an ended mute: the same as null.
    muted_until = models.DateTimeField(
        "notifications muted until", null=True, blank=True
    )
    channels = models.ManyToManyField(
        "Channel", through="MonitorChannel", related_name="monitors", blank=True
    )
    tags = models.ManyToManyField("Tag", related_name="monitors", blank=True)
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
        return reverse("monitor-detail", args=[self.pk])

    @property
    def schedule(self) -> schedules.Schedule:
        return schedules.Schedule(self.schedule_cron, self.run_zone)

    @property
    def run_zone(self) -> str:
        """The zone its schedule runs in: its own, else UTC once the tz
        database dropped it (US/Pacific-New went in 2020, others go with a
        server's tzdata upgrade), so the monitor keeps running instead of
        failing every dispatcher tick; zone_gone_words says so."""
        try:
            return schedules.normalize_timezone(self.schedule_timezone)
        except schedules.ScheduleError:
            return schedules.DEFAULT_TIMEZONE

    @property
    def zone_gone_words(self) -> str:
        """Why it runs on UTC, for staff; "" while its own zone exists."""
        try:
            schedules.normalize_timezone(self.schedule_timezone)
        except schedules.ScheduleError:
            return (
                f"Its time zone {self.schedule_timezone} no longer exists; it runs "
                "on UTC until you pick another."
            )
        return ""

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

    def is_muted(self, now: datetime) -> bool:
        """Whether its notifications are muted at `now`."""
        return self.muted_until is not None and self.muted_until > now

    def mute_end(self, now: datetime) -> datetime | None:
        """When its mute ends (MUTED_FOREVER: when someone unmutes it); None
        while it is not muted, an ended mute included."""
        return self.muted_until if self.is_muted(now) else None

    @property
    def mute_ends_at(self) -> datetime | None:
        """mute_end now, for pages and lists that show the mute."""
        return self.mute_end(timezone.now())

    @property
    def muted_forever(self) -> bool:
        return self.muted_until == MUTED_FOREVER

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

    @property
    def tag_names(self) -> list[str]:
        """Its tags' names, alphabetically (from a prefetch when there is one)."""
        return sorted((tag.name for tag in self.tags.all()), key=str.lower)

    def soft_delete(self, now: datetime) -> None:
        self.deleted_at = now
        self.next_run_at = None
        self.save(update_fields=["deleted_at", "next_run_at", "updated_at"])

    @property
    def history_goes_at(self) -> datetime | None:
        """When retention removes a deleted monitor and what it kept
        (checks.retention); None while it is not deleted."""
        if self.deleted_at is None:
            return None
        return self.deleted_at + timedelta(days=self.retention_days)

    @property
    def judging(self) -> bool:
        """Whether checks judge this monitor's changes (judging on, with a
        goal). Without a configured model the judge fails open: its changes
        are reported "not judged", and cost nothing (see credits_judged)."""
        return self.judge_enabled and bool(self.goal)

    @property
    def change_rules_words(self) -> list[str]:
        """Its change rules in plain words, one sentence each ([] for none)."""
        return rules_changes.words(self.change_rules)

    @property
    def credits_judged(self) -> bool:
        """Judging that can run, and so is counted in the estimate."""
        return self.judging and judge_available()

    def set_schedule(self, cron: str, zone: str, now: datetime) -> None:
        # The same schedule saved again (the dashboard's form always sends
        # it) keeps its next run: worked out again from now, a slot that came
        # due but was not dispatched yet (its spread delay, a busy scheduler)
        # would be skipped.
        unchanged = (cron, zone) == (self.schedule_cron, self.schedule_timezone)
        self.schedule_cron = cron
        self.schedule_timezone = zone
        self.run_interval_minutes = schedules.shortest_interval_minutes(cron, now)
        if not (unchanged and self.next_run_at is not None):
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

    @property
    def finds_pages(self) -> bool:
        """Whether its checks find their pages as they go (a crawl's), so
        the count of pages to check grows while a check runs."""
        return any(t.kind is not None and t.kind.finds_pages for t in self.target_list)

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

    def sync_email_recipients(self, added_by: str = "") -> None:
        """Reconcile subscription rows with notification.email.recipients;
        new ones say who added them (a person's name, or "").

        Existing rows are kept as they are, so removing and re-adding an
        address neither re-sends a confirmation nor undoes an unsubscribe.
        """
        # A full name can be twice a user's name fields (301 characters):
        # cut to the column, which PostgreSQL would refuse past.
        added_by = added_by[: EmailRecipient._meta.get_field("added_by").max_length]
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
                added_by=added_by,
            )

    def recipient_subscriptions(self) -> list[EmailRecipient]:
        wanted = {r.lower() for r in self.email_settings.get("recipients") or []}
        if not wanted:
            return []  # no query: lists prefetch only monitors with recipients
        return [r for r in self.email_recipients.all() if r.email in wanted]


class Target(models.Model):
    # The built-in kinds' names, for code that creates targets of them; which
    # types are valid is the registry's to say (target_kinds.choices).
    class Type(models.TextChoices):
        SCRAPE = "scrape"
        CRAWL = "crawl"
        SEARCH = "search"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    monitor = models.ForeignKey(
        Monitor, on_delete=models.CASCADE, related_name="targets"
    )
    position = models.PositiveSmallIntegerField(default=0)
    type = models.CharField(max_length=16, choices=target_kinds.choices)
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
    # Who in the team added the address, by name, as its confirmation e-mail
    # says it ("" when no person is known: a key nobody made, an import by
    # a command). Copied, so it still says who after they are gone.
    added_by = models.CharField(max_length=150, blank=True)
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
