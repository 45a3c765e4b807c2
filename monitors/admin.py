"""Admin for teams, API keys and monitors: an operator's view of the tenancy
and scheduling state.

A monitor is edited here with the dashboard's own form (monitors.dashboard.forms),
so the same rules refuse the same input with the same words (schedules, time
zones, URLs, goal rules, limits), and it is saved by the same workflow
(monitors.editing) with an entry in the team's activity log. Pause/Resume
actions call the model.

Everything that may have come from a user or a page is rendered through
format_html / format_html_join so it is escaped; nothing here uses mark_safe.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from axes.models import AccessFailureLog, AccessLog
from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import flatten_fieldsets
from django.core.exceptions import ValidationError
from django.db import router, transaction
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery
from django.db.models.deletion import Collector, ProtectedError
from django.db.models.functions import Coalesce
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse, QueryDict
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.text import smart_split, unescape_string_literal
from django.utils.translation import ngettext

from checks.models import ChannelDelivery
from checks.notify import kinds
from monitors.dashboard.forms.fields import MonitorFields
from monitors.dashboard.forms.monitor import MonitorForm
from monitors.dashboard.forms.targets import TargetFields, target_initial
from monitors.editing import update_monitor
from monitors.models import (
    KEY_LOOKUP_LENGTH,
    KEY_PREFIX,
    ApiKey,
    Channel,
    EmailRecipient,
    LastOwnerError,
    Membership,
    Monitor,
    Target,
    Team,
)
from monitors.schedule import Schedule
from monitors.schedule_words import describe
from monitors.target_kinds import all_kinds
from teams.activity import (
    Actor,
    Kind,
    Via,
    monitor_fields,
    record,
    record_monitor_change,
)

admin.site.site_header = "Pagewatch administration"
admin.site.site_title = "Pagewatch admin"
admin.site.index_title = "Pagewatch"
# The sign-in throttle (django-axes) keeps neither log (config.settings): only
# its access attempts, where an administrator lifts a lockout, are listed.
admin.site.unregister([AccessLog, AccessFailureLog])


# --- Shared display helpers (also used by checks.admin) ----------------------


def _when(moment: datetime) -> str:
    return f"{timezone.localtime(moment):%Y-%m-%d %H:%M %Z}"


def summary_text(summary: dict[str, Any] | None) -> str:
    """A check summary ({"totalPages", "same", "changed", ...}) in one line."""
    if not summary:
        return "—"
    parts = [f"{_count(summary.get('totalPages'))} pages"]
    for key in ("changed", "new", "removed", "error"):
        count = _count(summary.get(key))
        if count:
            parts.append(f"{count} {key}")
    return " · ".join(parts)


def _count(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def json_block(value: Any) -> str:
    """Pretty JSON in a <pre>, escaped; for read-only JSON fields."""
    if value in (None, {}, []):
        return "—"
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    return format_html('<pre class="pw-json">{}</pre>', text)


def with_masked_headers(value: Any) -> Any:
    """`value` (a webhook, scrapeOptions) with its headers' values masked:
    they often carry credentials (Authorization, cookies), which are the
    team's, not for everyone who may read the admin."""
    if not isinstance(value, dict) or not isinstance(value.get("headers"), dict):
        return value
    masked = {name: _masked(str(v)) for name, v in value["headers"].items()}
    return value | {"headers": masked}


def _masked(secret: str) -> str:
    return f"…{secret[-4:]}" if len(secret) > 12 else "…"


def admin_link(obj: Any, text: Any = None) -> str:
    """A link to obj's admin change page; the text is escaped."""
    if obj is None:
        return "—"
    opts = obj._meta
    url = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
    return format_html('<a href="{}">{}</a>', url, obj if text is None else text)


def changelist_link(model: type, text: str, **params: Any) -> str:
    opts = model._meta
    url = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
    return format_html('<a href="{}?{}">{}</a>', url, urlencode(params), text)


def search_terms(search_term: str) -> Iterable[str]:
    """Split the admin search box the way Django does (quotes group words)."""
    for bit in smart_split(search_term):
        if bit.startswith(('"', "'")) and bit[0] == bit[-1]:
            bit = unescape_string_literal(bit)
        if bit:
            yield bit


def report_action(
    model_admin: admin.ModelAdmin,
    request: HttpRequest,
    did: str,
    *,
    done: int,
    left: int,
    why_left: str,
) -> None:
    """Say what a bulk action did, and why it left some rows as they were:
    "Paused 0 monitors." alone reads like a failure."""
    if not done:
        model_admin.message_user(
            request,
            f"Nothing changed: the selection was {why_left}.",
            messages.WARNING,
        )
        return
    if left > 0:
        did += " " + ngettext(
            "%(n)d left as it was (%(why)s).",
            "%(n)d left as they were (%(why)s).",
            left,
        ) % {"n": left, "why": why_left}
    model_admin.message_user(request, did, messages.SUCCESS)


class ChangedFieldsOnlyMixin:
    """Saves an edited row with update_fields=<what the form changed>.

    A plain save() writes back every column as it was when the page loaded,
    which would undo a concurrent revocation, rotation or scheduler update."""

    def save_model(
        self, request: HttpRequest, obj: Any, form: Any, change: bool
    ) -> None:
        if not change:
            obj.save()
            return
        fields = [name for name in form.changed_data if name in form.base_fields]
        if not fields:
            return
        auto_now = [
            f.name for f in obj._meta.concrete_fields if getattr(f, "auto_now", False)
        ]
        obj.save(update_fields=fields + auto_now)


class CountedDeleteMixin:
    """The delete confirmation says how many rows of each kind go with the
    object instead of listing them one by one: a check or a monitor takes
    thousands of page results and deliveries with it, and Django's list
    loads every one of them whole and renders a link to each (seconds for a
    1,000-page check). Protected rows and missing permissions still stop
    the deletion, as in Django's own."""

    admin_site: admin.AdminSite

    def get_deleted_objects(
        self, objs: Any, request: HttpRequest
    ) -> tuple[list[str], dict[str, int], set[str], list[str]]:
        objs = list(objs)
        if not objs:
            return [], {}, set(), []
        collector = Collector(using=router.db_for_write(objs[0]._meta.model))
        try:
            collector.collect(objs)
        except ProtectedError as error:
            return [], {}, set(), [str(obj) for obj in error.protected_objects]
        counts: Counter[type] = Counter()
        for model, instances in collector.data.items():
            counts[model] += len(instances)
        for rows in collector.fast_deletes:
            counts[rows.model] += rows.count()
        perms_needed = {
            model._meta.verbose_name
            for model in counts
            if self.admin_site.is_registered(model)
            and not self.admin_site.get_model_admin(model).has_delete_permission(
                request
            )
        }
        model_count = {
            str(model._meta.verbose_name_plural): count
            for model, count in counts.items()
            if count
        }
        return [admin_link(obj) for obj in objs], model_count, perms_needed, []


# --- Teams --------------------------------------------------------------------


def _team_count(rows: QuerySet) -> Coalesce:
    """How many of `rows` (filtered on team=OuterRef("pk")) there are, as a
    subquery for annotate()."""
    counted = rows.order_by().values("team").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted), 0)


def _admin(request: HttpRequest) -> Actor:
    return Actor.of(request, via=Via.ADMIN)


class KeepsAnOwner(BaseInlineFormSet):
    """A team keeps at least one owner in the admin too."""

    def clean(self) -> None:
        super().clean()
        roles = [
            form.cleaned_data.get("role")
            for form in self.forms
            if form.cleaned_data and not form.cleaned_data.get("DELETE")
        ]
        had_owner = (
            self.instance.pk
            and Membership.objects.filter(
                team=self.instance, role=Membership.Role.OWNER
            ).exists()
        )
        if had_owner and Membership.Role.OWNER not in roles:
            raise ValidationError(LastOwnerError.message)


class MembershipInline(admin.TabularInline):
    model = Membership
    formset = KeepsAnOwner
    extra = 0
    autocomplete_fields = ["user"]
    fields = ["user", "role", "created_at"]
    readonly_fields = ["created_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Membership]:
        # Each row is titled with str(membership), "<user> in <team>".
        return super().get_queryset(request).select_related("user", "team")


class TeamApiKeyInline(admin.TabularInline):
    """The team's keys at a glance; issuing and revoking happen on the key admin."""

    model = ApiKey
    extra = 0
    can_delete = False
    show_change_link = True
    fields = ["key", "name", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = fields
    verbose_name_plural = "API keys"

    @admin.display(description="Key")
    def key(self, obj: ApiKey) -> str:
        return obj.display_prefix

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Team)
class TeamAdmin(CountedDeleteMixin, ChangedFieldsOnlyMixin, admin.ModelAdmin):
    list_display = [
        "name",
        "slug",
        "member_count",
        "monitor_count",
        "masked_webhook_secret",
        "credit_allowance",
        "created_at",
    ]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    fields = [
        "name",
        "slug",
        "credit_allowance",
        "feeds_enabled",
        "masked_webhook_secret",
        "created_at",
    ]
    readonly_fields = ["masked_webhook_secret", "created_at"]
    inlines = [MembershipInline, TeamApiKeyInline]

    def save_formset(
        self, request: HttpRequest, form: Any, formset: Any, change: bool
    ) -> None:
        """Members added, removed or given another role here are in the
        team's activity log like those changed on the Team page."""
        if formset.model is not Membership:
            super().save_formset(request, form, formset, change)
            return
        was = dict(
            Membership.objects.filter(team=form.instance).values_list("pk", "role")
        )
        super().save_formset(request, form, formset, change)
        actor = _admin(request)
        team = form.instance
        for membership in formset.new_objects:
            record(actor, team, Kind.MEMBER_JOINED, role=membership.role,
                   member=membership.user.get_username())  # fmt: skip
        for membership, _ in formset.changed_objects:
            if was.get(membership.pk) != membership.role:
                record(actor, team, Kind.ROLE_CHANGED, role=membership.role,
                       was=was.get(membership.pk),
                       member=membership.user.get_username())  # fmt: skip
        for membership in formset.deleted_objects:
            record(actor, team, Kind.MEMBER_REMOVED,
                   member=membership.user.get_username())  # fmt: skip

    actions = ["rotate_webhook_secret"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Team]:
        # Each count in its own subquery: two Counts over joins would count
        # every pairing of a team's members with its monitors.
        members = Membership.objects.filter(team=OuterRef("pk"))
        monitors = Monitor.objects.alive().filter(team=OuterRef("pk"))
        return (
            super()
            .get_queryset(request)
            .annotate(
                member_total=_team_count(members),
                monitor_total=_team_count(monitors),
            )
        )

    @admin.display(description="Members", ordering="member_total")
    def member_count(self, team: Team) -> int:
        return team.member_total

    @admin.display(description="Monitors", ordering="monitor_total")
    def monitor_count(self, team: Team) -> str:
        return changelist_link(
            Monitor, str(team.monitor_total), team__id__exact=team.pk
        )

    @admin.display(description="Webhook secret")
    def masked_webhook_secret(self, team: Team) -> str:
        if not team.webhook_secret:
            return "not set"
        until = team.previous_webhook_secret_signs_until
        if until is None:
            return team.masked_webhook_secret
        previous = Team.mask_webhook_secret(team.previous_webhook_secret)
        return (
            f"{team.masked_webhook_secret} (the previous {previous} signs too "
            f"until {_when(until)})"
        )

    @admin.action(description="Rotate webhook secret", permissions=["change"])
    def rotate_webhook_secret(self, request: HttpRequest, queryset: QuerySet) -> None:
        # The new value is shown here once; afterwards the admin shows it
        # masked (team members can show it in the dashboard's Team page).
        for team in queryset:
            secret = team.rotate_webhook_secret()
            until = team.previous_webhook_secret_signs_until
            grace = ""
            if until is not None:
                grace = f" The previous one also signs until {_when(until)}."
            self.message_user(
                request,
                format_html(
                    "New webhook secret for {}: <code>{}</code> — update the "
                    "receivers.{}",
                    team.name,
                    secret,
                    grace,
                ),
                messages.SUCCESS,
            )


# --- API keys -----------------------------------------------------------------


class KeyStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("active", "Active"), ("revoked", "Revoked")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet | None:
        if self.value() == "active":
            return queryset.filter(revoked_at__isnull=True)
        if self.value() == "revoked":
            return queryset.filter(revoked_at__isnull=False)
        return None


@admin.register(ApiKey)
class ApiKeyAdmin(ChangedFieldsOnlyMixin, admin.ModelAdmin):
    """Keys are issued with ApiKey.issue: the form asks only for team and name,
    the raw key is shown once in a message after saving, and only its hash is
    stored. Revocation is immediate (authentication reads revoked_at)."""

    list_display = [
        "key",
        "team",
        "name",
        "created_at",
        "last_used_at",
        "scope",
        "active",
        "created_by",
    ]
    list_filter = [KeyStateFilter, "scope", "team"]
    list_select_related = ["team", "created_by"]
    search_fields = ["prefix", "name", "team__name", "team__slug"]
    search_help_text = "Key prefix (pw_…), name or team."
    actions = ["revoke_selected"]
    ADD_FIELDS = ["team", "name", "scope"]
    CHANGE_FIELDS = [
        "key",
        "team",
        "name",
        "scope",
        "created_by",
        "created_at",
        "last_used_at",
        "revoked_at",
    ]

    @admin.display(description="Key", ordering="prefix")
    def key(self, obj: ApiKey) -> str:
        return obj.display_prefix

    @admin.display(description="Active", boolean=True, ordering="revoked_at")
    def active(self, obj: ApiKey) -> bool:
        return obj.is_active

    def get_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> list[str]:
        return self.CHANGE_FIELDS if obj else self.ADD_FIELDS

    def get_readonly_fields(
        self, request: HttpRequest, obj: ApiKey | None = None
    ) -> list[str]:
        if obj is None:
            return []
        return [field for field in self.CHANGE_FIELDS if field != "name"]

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        # "pw_AbC…" as listed, or a whole key pasted in: search by the stored
        # lookup prefix (the characters after "pw_").
        terms = []
        for term in search_terms(search_term):
            term = term.rstrip("…")
            if term.startswith(KEY_PREFIX):
                term = term[len(KEY_PREFIX) :][:KEY_LOOKUP_LENGTH]
            terms.append(term)
        return super().get_search_results(request, queryset, " ".join(terms))

    def save_model(
        self, request: HttpRequest, obj: ApiKey, form: Any, change: bool
    ) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        # The admin goes on to log and redirect with `obj`: it is the saved row.
        obj.created_by = request.user
        raw = obj.new_secret()
        obj.save()
        record(_admin(request), obj.team_id, Kind.KEY_CREATED,
               name=obj.name, scope=obj.scope)  # fmt: skip
        obj._raw_key = raw  # type: ignore[attr-defined]

    def response_add(
        self, request: HttpRequest, obj: ApiKey, post_url_continue: str | None = None
    ) -> HttpResponse:
        raw = obj.__dict__.pop("_raw_key", None)
        if raw:
            self.message_user(
                request,
                format_html(
                    "API key for {}: <code>{}</code> — copy it now, it will not be "
                    "shown again (only its hash is stored).",
                    obj.team.name,
                    raw,
                ),
                messages.SUCCESS,
            )
        return super().response_add(request, obj, post_url_continue)

    @admin.action(description="Revoke selected keys", permissions=["change"])
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet) -> None:
        active = list(queryset.filter(revoked_at__isnull=True))
        revoked = queryset.filter(
            pk__in=[key.pk for key in active], revoked_at__isnull=True
        ).update(revoked_at=timezone.now())
        for key in active:
            record(_admin(request), key.team_id, Kind.KEY_REVOKED, name=key.name)
        report_action(
            self,
            request,
            ngettext("Revoked %d key.", "Revoked %d keys.", revoked) % revoked,
            done=revoked,
            left=queryset.count() - revoked,
            why_left="already revoked",
        )


# --- Monitors -----------------------------------------------------------------


class DeletedFilter(admin.SimpleListFilter):
    """Soft-deleted monitors are hidden unless asked for."""

    title = "deleted"
    parameter_name = "deleted"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Deleted"), ("any", "Live and deleted")]

    def choices(self, changelist: Any) -> Iterable[dict[str, Any]]:
        yield {
            "selected": self.value() is None,
            "query_string": changelist.get_query_string(remove=[self.parameter_name]),
            "display": "Live",
        }
        for lookup, title in self.lookup_choices:
            yield {
                "selected": self.value() == lookup,
                "query_string": changelist.get_query_string(
                    {self.parameter_name: lookup}
                ),
                "display": title,
            }

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "yes":
            return queryset.filter(deleted_at__isnull=False)
        if self.value() == "any":
            return queryset
        return queryset.filter(deleted_at__isnull=True)


class TargetInline(admin.TabularInline):
    model = Target
    extra = 0
    can_delete = False
    fields = ["position", "type", "pages", "options", "created_at"]
    readonly_fields = fields

    @admin.display(description="URLs / queries")
    def pages(self, target: Target) -> str:
        items = target.kind.watched(target) if target.kind is not None else []
        # Shown as text, never as links: these are user-chosen URLs.
        return format_html_join("", "<div>{}</div>", ((item,) for item in items)) or "—"

    @admin.display(description="Options")
    def options(self, target: Target) -> str:
        options = {
            "scrapeOptions": with_masked_headers(target.scrape_options),
            "crawlOptions": target.crawl_options,
            "searchWindow": target.search_window,
            "maxResults": target.max_results,
            "includeDomains": target.include_domains,
            "excludeDomains": target.exclude_domains,
        }
        return json_block(
            {k: v for k, v in options.items() if v not in ("", None, {}, [])}
        )

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class EmailRecipientInline(admin.TabularInline):
    """Consent records: changing them here would bypass the opt-in flow."""

    model = EmailRecipient
    extra = 0
    can_delete = False
    fields = [
        "email",
        "status",
        "source",
        "confirmation_sent_at",
        "confirmed_at",
        "unsubscribed_at",
        "created_at",
    ]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


# --- Editing a monitor: the dashboard's own form, laid out for the admin --------

MASKED = " Values are shown masked (…1234): one left as shown keeps its stored value."

# The dashboard's template holds the words for its fields; these are the same
# words for the admin. A field missing here (one the dashboard gains later) is
# still offered, under its own name, so the admin never edits less than the
# dashboard does.
FIELD_WORDS = {
    "name": ("Name", ""),
    "status": ("Status", "A paused monitor runs no checks until it is resumed."),
    "schedule": (
        "Schedule",
        "In words (every 30 minutes, weekdays at 9:00) or as cron (*/30 * * * *).",
    ),
    "timezone": ("Time zone", "Such as Europe/Berlin: the schedule follows it."),
    "goal": ("Goal", "What matters on these pages; changes are judged against it."),
    "judge": ("Judge changes with AI", ""),
    "ignore_lines": ("Lines to ignore", "One per line; /…/ for a pattern."),
    "fetch_with": ("How pages are loaded", ""),
    "channels": ("Channels", "The team's channels this monitor sends to."),
    "email_enabled": ("Send e-mails about changes", ""),
    "email_recipients": ("E-mail recipients", "One address per line."),
    "email_include_diffs": ("Include what changed in the e-mail", ""),
    "webhook_url": ("Webhook address", ""),
    "webhook_events": ("Webhook messages", ""),
    "webhook_pages": ("Page messages for", ""),
    "webhook_headers": ("Webhook headers", "One per line: Name: value." + MASKED),
    "webhook_metadata": ("Webhook metadata", "One per line: name: value."),
    "retention_days": ("Keep check results for (days)", ""),
    "urls": ("Page addresses", "One per line."),
    "url": ("Start address", ""),
    "limit": ("Most pages per check", ""),
    "depth": ("Link depth", ""),
    "include_paths": ("Only paths matching", "Patterns, one per line."),
    "exclude_paths": ("Skip paths matching", "Patterns, one per line."),
    "queries": ("Search for", "One search per line."),
    "search_window": ("Published within", ""),
    "max_results": ("Most results", ""),
    "include_domains": ("Only these sites", "Host names, one per line."),
    "exclude_domains": ("Never these sites", "Host names, one per line."),
    "only_main_content": (
        "Only the main content (skip menus, headers and footers)",
        "",
    ),
    "mobile": ("Load pages as a phone would", ""),
    "include_tags": ("Only these HTML tags or selectors", "Separated by commas."),
    "exclude_tags": ("Leave out these tags or selectors", "Separated by commas."),
    "headers": ("Request headers", "One per line: Name: value." + MASKED),
    "timeout": ("Give up after (milliseconds)", ""),
    "wait_for": ("Wait before reading (milliseconds)", ""),
    "remove": ("Remove this target", ""),
}

# Where the monitor's own fields stand on the change page, with the read-only
# facts beside them; a dashboard field not placed here goes under "Other".
MONITOR_SECTIONS: list[tuple[str | None, list[str]]] = [
    (None, ["name", "status", "team", "deleted_at", "checks"]),
    ("Schedule", ["schedule_words", "schedule", "timezone", "next_run", "last_run",
                  "current_check_id"]),
    ("Judging", ["goal", "judge", "ignore_lines"]),
    ("Loading pages", ["fetch_with"]),
    ("Notifications", ["channels", "email_enabled", "email_recipients",
                       "email_include_diffs", "webhook_url", "webhook_events",
                       "webhook_pages", "webhook_headers", "webhook_metadata",
                       "notification_json", "retention_days"]),
]  # fmt: skip
LAST_CHECK_SECTION = (
    "Last check",
    {"fields": ["last_check_json", "created_at", "updated_at"]},
)


def new_row_keys() -> dict[str, str]:
    """One empty row per kind of target at the foot of the form: filled in,
    it is added to the monitor (the dashboard's "+ Pages", "+ Website
    crawl"…). Read from the registry when asked, as a kind may register late."""
    return {kind.name: f"tadd{n}" for n, kind in enumerate(all_kinds(), 1)}


@dataclass
class TargetRow:
    """One target's part of the admin form: its fields under the row key the
    dashboard's form reads them by."""

    key: str
    title: str
    fields: TargetFields
    stored: Target | None

    def names(self) -> list[str]:
        shown = [self.fields.add_prefix(name) for name in self.fields.shown_fields()]
        return shown + ([f"{self.key}-remove"] if self.stored else [])

    def filled_in(self, data: Mapping[str, Any]) -> bool:
        """A new row counts once something was typed into it; its check boxes
        and preset choices alone leave it out."""
        for name in self.fields.shown_fields():
            field = self.fields.fields[name]
            if isinstance(field, forms.BooleanField):
                continue
            typed = str(data.get(self.fields.add_prefix(name), "")).strip()
            preset = str(self.fields.initial.get(name, field.initial) or "").strip()
            if typed and typed != preset:
                return True
        return False


def target_rows(monitor: Monitor) -> list[TargetRow]:
    """The monitor's targets, then one empty row per kind to add one."""
    rows = []
    for number, target in enumerate(
        monitor.targets.order_by("position", "created_at"), 1
    ):
        key = f"t{target.id.hex[:16]}"
        fields = TargetFields(prefix=key, initial=target_initial(target))
        title = f"Target {number}: {fields.kind_label}"
        rows.append(TargetRow(key, title, fields, target))
    for kind, key in new_row_keys().items():
        fields = TargetFields(prefix=key, initial={"type": kind})
        rows.append(TargetRow(key, f"Add a target: {fields.kind_label}", fields, None))
    return rows


def _worded(name: str, field: forms.Field) -> forms.Field:
    label, help_text = FIELD_WORDS.get(name.rsplit("-", 1)[-1], (None, ""))
    field.label = label or field.label
    field.help_text = help_text or field.help_text
    # The dashboard points at its own help and error slots; Django's admin
    # describes a field by its help text instead.
    field.widget.attrs.pop("aria-describedby", None)
    return field


def _masked_pairs(headers: Mapping[str, Any]) -> str:
    """Headers as the form's "Name: value" lines, values masked (see
    with_masked_headers)."""
    return "\n".join(
        f"{name}: {_masked(str(value))}" for name, value in headers.items()
    )


def _unmasked(text: str, headers: Mapping[str, Any]) -> str:
    """The posted lines with each value left masked as shown put back to the
    stored value, so saving the page unchanged keeps every header."""
    lines = []
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        name = name.strip()
        if sep and name in headers and value.strip() == _masked(str(headers[name])):
            line = f"{name}: {headers[name]}"
        lines.append(line)
    return "\n".join(lines)


class MonitorAdminForm(forms.ModelForm):
    """The dashboard's monitor form (monitors.dashboard.forms.monitor) laid out
    for the admin: the same fields, parsed and validated by the same code (and so
    by the API's rules), and saved by the same monitors.editing workflow.
    Status, which the dashboard sets with its Pause and Resume buttons, is
    one more field."""

    status = forms.ChoiceField(choices=Monitor.Status.choices)

    class Meta:
        model = Monitor
        # Nothing is written field by field: MonitorAdmin.save_model saves the
        # validated edit through monitors.editing.
        fields: list[str] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        monitor = self.instance
        shown = MonitorForm(monitor=monitor)
        self.initial["status"] = monitor.status
        _worded("status", self.fields["status"])
        for name, field in shown.main.fields.items():
            self.fields[name] = _worded(name, field)
            self.initial[name] = shown.main.initial.get(name, field.initial)
        self.rows = target_rows(monitor)
        for row in self.rows:
            for name in row.fields.shown_fields():
                full = row.fields.add_prefix(name)
                self.fields[full] = _worded(name, row.fields.fields[name])
                self.initial[full] = row.fields.initial.get(
                    name, row.fields.fields[name].initial
                )
            if row.stored is not None:
                self.fields[f"{row.key}-remove"] = _worded(
                    "remove", forms.BooleanField(required=False)
                )
        # Header values are credentials: shown masked, put back when posted so.
        self.secrets = {"webhook_headers": (monitor.webhook or {}).get("headers")}
        for row in self.rows:
            if row.stored is not None:
                headers = (row.stored.scrape_options or {}).get("headers")
                self.secrets[row.fields.add_prefix("headers")] = headers
        for name, headers in self.secrets.items():
            if name in self.fields and isinstance(headers, dict):
                self.initial[name] = _masked_pairs(headers)
        self.dashboard = MonitorForm(
            self._dashboard_data() if self.is_bound else None, monitor=monitor
        )

    def _dashboard_data(self) -> QueryDict:
        """What the dashboard's form would have been sent: the rows kept, in
        order, each with its stored id and kind (not taken from the page)."""
        data = self.data.copy()
        for name, headers in self.secrets.items():
            if name in data and isinstance(headers, dict):
                data[name] = _unmasked(data[name], headers)
        keys = []
        for row in self.rows:
            if row.stored is not None:
                if forms.CheckboxInput().value_from_datadict(
                    self.data, self.files, f"{row.key}-remove"
                ):
                    continue
                data[f"{row.key}-id"] = str(row.stored.id)
                data[f"{row.key}-type"] = row.stored.type
            elif row.filled_in(self.data):
                data[f"{row.key}-id"] = ""
                data[f"{row.key}-type"] = row.fields.kind
            else:
                continue
            keys.append(row.key)
        data.setlist("target", keys)
        return data

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if not self.dashboard.is_valid():
            self._show(self.dashboard.errors)
        return cleaned

    def _show(self, errors: dict[str, list[str]]) -> None:
        """The dashboard's messages on the admin's fields; those about the
        targets as a whole (none left, too many) or about a row's options the
        form does not show go above the form, naming the row."""
        titles = {row.key: row.title for row in self.rows}
        for slot, messages_ in errors.items():
            if slot == "schedule" and "timezone" in self.dashboard.schedule_faults:
                # The zone's problem first, as MonitorForm lists it.
                self.add_error("timezone", messages_[0])
                messages_ = messages_[1:]
            for message in messages_:
                if slot in self.fields:
                    self.add_error(slot, message)
                elif slot in titles:
                    self.add_error(None, f"{titles[slot]}: {message}")
                else:
                    self.add_error(None, message)

    def edit_for(self, current: Monitor) -> dict[str, Any]:
        """The validated edit, as monitors.editing takes it, for the row as
        it is now. A schedule saved as it was is left out, so a change of
        name does not move a run the scheduler has already set."""
        assert self.dashboard.validated_data is not None, "call is_valid() first"
        edit = dict(self.dashboard.validated_data)
        schedule = edit.get("schedule")
        if schedule and (schedule["cron"], schedule["timezone"]) == (
            current.schedule_cron,
            current.schedule_timezone,
        ):
            del edit["schedule"]
        edit["status"] = self.cleaned_data["status"]
        return edit


def _in_zone(moment: datetime | None, zone: str) -> str:
    """A time in the monitor's own zone, the zone named: "2026-11-28 10:30 CET"."""
    if moment is None:
        return "—"
    try:
        local = moment.astimezone(ZoneInfo(zone))
    except (ValueError, KeyError):
        local = moment.astimezone(UTC)
    return f"{local:%Y-%m-%d %H:%M:%S} {local.tzname()}"


@admin.register(Monitor)
class MonitorAdmin(CountedDeleteMixin, admin.ModelAdmin):
    """A live monitor is edited with the dashboard's form and rules (see
    MonitorAdminForm); a deleted one, or one seen without the right to
    change it, is shown read-only as stored."""

    form = MonitorAdminForm
    list_display = [
        "name",
        "team",
        "state",
        "schedule",
        "next_run",
        "last_run",
        "target_count",
        "last_check",
        "created_at",
    ]
    list_filter = ["status", DeletedFilter, "team", "judge_enabled"]
    list_select_related = ["team"]
    # The search itself is get_search_results; this only turns the box on.
    search_fields = ["name"]
    search_help_text = "Monitor name, team, or part of a target URL."
    actions = ["pause_selected", "resume_selected"]
    READ_ONLY_FIELDSETS = [
        (None, {"fields": ["name", "team", "status", "deleted_at", "checks"]}),
        (
            "Schedule",
            {
                "fields": [
                    "schedule_words",
                    "next_run",
                    "last_run",
                    "current_check_id",
                ]
            },
        ),
        ("Judging", {"fields": ["judge_enabled", "goal", "ignore_lines"]}),
        ("Loading pages", {"fields": ["fetch_with"]}),
        (
            "Notifications",
            {
                "fields": [
                    "webhook_json",
                    "webhook_pages",
                    "notification_json",
                    "retention_days",
                ]
            },
        ),
        LAST_CHECK_SECTION,
    ]
    readonly_fields = [
        "team",
        "deleted_at",
        "checks",
        "schedule_words",
        "next_run",
        "last_run",
        "current_check_id",
        "judge_enabled",
        "webhook_json",
        "notification_json",
        "last_check_json",
        "created_at",
        "updated_at",
    ]

    def has_change_permission(
        self, request: HttpRequest, obj: Monitor | None = None
    ) -> bool:
        # A deleted monitor runs no more and the dashboard no longer edits it.
        alive = obj is None or obj.deleted_at is None
        return alive and super().has_change_permission(request, obj)

    def _editing(self, request: HttpRequest, obj: Monitor | None) -> bool:
        return obj is not None and self.has_change_permission(request, obj)

    def get_form(
        self,
        request: HttpRequest,
        obj: Monitor | None = None,
        change: bool = False,
        **kwargs: Any,
    ) -> type[forms.ModelForm]:
        # The fieldsets name the dashboard's fields, which MonitorAdminForm
        # adds itself: none of them is a model field for the factory to make.
        kwargs["fields"] = []
        if not self._editing(request, obj):
            kwargs["form"] = forms.ModelForm
        return super().get_form(request, obj, change, **kwargs)

    def get_fieldsets(
        self, request: HttpRequest, obj: Monitor | None = None
    ) -> list[tuple[str | None, dict[str, Any]]]:
        if not self._editing(request, obj):
            return self.READ_ONLY_FIELDSETS
        assert obj is not None
        placed = {name for _, names in MONITOR_SECTIONS for name in names}
        others = [name for name in MonitorFields.base_fields if name not in placed]
        sections: list[tuple[str | None, dict[str, Any]]] = [
            (title, {"fields": names}) for title, names in MONITOR_SECTIONS[:1]
        ]
        for row in target_rows(obj):
            classes = [] if row.stored else ["collapse"]
            sections.append((row.title, {"fields": row.names(), "classes": classes}))
        sections += [
            (title, {"fields": names}) for title, names in MONITOR_SECTIONS[1:]
        ]
        if others:
            sections.append(("Other", {"fields": others}))
        sections.append(LAST_CHECK_SECTION)
        return sections

    def get_readonly_fields(
        self, request: HttpRequest, obj: Monitor | None = None
    ) -> list[str]:
        if self._editing(request, obj):
            return self.readonly_fields
        return flatten_fieldsets(self.READ_ONLY_FIELDSETS)

    def get_inlines(self, request: HttpRequest, obj: Monitor | None) -> list[type]:
        # Targets are part of the form when editing; listed as stored otherwise.
        if self._editing(request, obj):
            return [EmailRecipientInline]
        return [TargetInline, EmailRecipientInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Monitor]:
        # Deleted monitors stay reachable (change page, "deleted" filter);
        # DeletedFilter hides them from the list by default.
        return super().get_queryset(request).annotate(target_total=Count("targets"))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # monitors are created through the API or the dashboard

    def save_model(
        self, request: HttpRequest, obj: Monitor, form: Any, change: bool
    ) -> None:
        """The edit goes onto the row as it is now, locked, through the
        dashboard's workflow: what the scheduler or the API wrote since the
        page loaded stays, and the activity log says what changed."""
        with transaction.atomic():
            current = Monitor.objects.select_for_update().get(pk=obj.pk)
            before = monitor_fields(current)
            update_monitor(current, form.edit_for(current), timezone.now())
        record_monitor_change(_admin(request), before, current)
        obj.refresh_from_db()

    def save_related(
        self, request: HttpRequest, form: Any, formsets: Any, change: bool
    ) -> None:
        # Channels were linked by save_model with the rest of the edit; the
        # form's own save_m2m would link them a second time.
        for formset in formsets:
            self.save_formset(request, form, formset, change=change)

    def delete_model(self, request: HttpRequest, obj: Monitor) -> None:
        record(_admin(request), obj.team_id, Kind.MONITOR_DELETED, obj)
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        for monitor in queryset:
            record(_admin(request), monitor.team_id, Kind.MONITOR_DELETED, monitor)
        super().delete_queryset(request, queryset)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet, search_term: str
    ) -> tuple[QuerySet, bool]:
        # Target URLs live in a JSON list (scrape) or a URL column (crawl).
        # JSONField's icontains compares against the JSON text on both SQLite
        # and PostgreSQL (jsonb::text); an Exists keeps one row per monitor.
        for term in search_terms(search_term):
            targets = Target.objects.filter(monitor=OuterRef("pk")).filter(
                Q(url__icontains=term) | Q(urls__icontains=term)
            )
            queryset = queryset.filter(
                Q(name__icontains=term)
                | Q(team__name__icontains=term)
                | Exists(targets)
            )
        return queryset, False

    @admin.display(description="Schedule")
    def schedule(self, monitor: Monitor) -> str:
        """In words where there are words for it, with the cron beside."""
        words = describe(Schedule(monitor.schedule_cron, monitor.schedule_timezone))
        cron = f"{monitor.schedule_cron}, {monitor.schedule_timezone}"
        return f"{words} ({cron})" if words else cron

    @admin.display(description="Runs")
    def schedule_words(self, monitor: Monitor) -> str:
        return self.schedule(monitor)

    @admin.display(description="Next run", ordering="next_run_at")
    def next_run(self, monitor: Monitor) -> str:
        return _in_zone(monitor.next_run_at, monitor.schedule_timezone)

    @admin.display(description="Last run", ordering="last_run_at")
    def last_run(self, monitor: Monitor) -> str:
        return _in_zone(monitor.last_run_at, monitor.schedule_timezone)

    @admin.display(description="Status", ordering="status")
    def state(self, monitor: Monitor) -> str:
        # A deleted monitor keeps the status it had; it runs no more either way.
        if monitor.deleted_at is not None:
            return "Deleted"
        return monitor.get_status_display()

    @admin.display(description="Targets", ordering="target_total")
    def target_count(self, monitor: Monitor) -> int:
        return monitor.target_total

    @admin.display(description="Last check")
    def last_check(self, monitor: Monitor) -> str:
        return summary_text(monitor.last_check_summary)

    @admin.display(description="Checks")
    def checks(self, monitor: Monitor) -> str:
        from checks.models import Check

        return changelist_link(Check, "All checks of this monitor", monitor=monitor.pk)

    @admin.display(description="Webhook")
    def webhook_json(self, monitor: Monitor) -> str:
        return json_block(with_masked_headers(monitor.webhook))

    @admin.display(description="Notification settings, as stored")
    def notification_json(self, monitor: Monitor) -> str:
        return json_block(monitor.notification)

    @admin.display(description="Last check summary")
    def last_check_json(self, monitor: Monitor) -> str:
        return json_block(monitor.last_check_summary)

    @admin.action(description="Pause selected monitors", permissions=["change"])
    def pause_selected(self, request: HttpRequest, queryset: QuerySet) -> None:
        count = 0
        with transaction.atomic():
            for monitor in self._lock(queryset, Monitor.Status.ACTIVE):
                monitor.pause()
                monitor.save(update_fields=["status", "next_run_at", "updated_at"])
                record(_admin(request), monitor.team_id, Kind.MONITOR_PAUSED, monitor)
                count += 1
        report_action(
            self,
            request,
            ngettext("Paused %d monitor.", "Paused %d monitors.", count) % count,
            done=count,
            left=queryset.count() - count,
            why_left="already paused or deleted",
        )

    @admin.action(description="Resume selected monitors", permissions=["change"])
    def resume_selected(self, request: HttpRequest, queryset: QuerySet) -> None:
        now = timezone.now()
        count = 0
        with transaction.atomic():
            for monitor in self._lock(queryset, Monitor.Status.PAUSED):
                monitor.resume(now)
                monitor.save(update_fields=["status", "next_run_at", "updated_at"])
                record(_admin(request), monitor.team_id, Kind.MONITOR_RESUMED, monitor)
                count += 1
        report_action(
            self,
            request,
            ngettext("Resumed %d monitor.", "Resumed %d monitors.", count) % count,
            done=count,
            left=queryset.count() - count,
            why_left="already active or deleted",
        )

    @staticmethod
    def _lock(queryset: QuerySet, status: str) -> QuerySet[Monitor]:
        # Re-select without the list's annotations (FOR UPDATE refuses GROUP BY)
        # and lock the rows so an API edit cannot interleave with the change.
        # Only monitors in the opposite state move: resuming an active monitor
        # would push a due run into the future.
        return (
            Monitor.objects.alive()
            .filter(pk__in=queryset.values("pk"), status=status)
            .select_for_update()
        )


@admin.register(Channel)
class ChannelAdmin(CountedDeleteMixin, ChangedFieldsOnlyMixin, admin.ModelAdmin):
    """A team's channels. Settings hold secrets: shown masked by the kind,
    never edited here (the dashboard and the API validate them)."""

    list_display = ["name", "team", "kind_label", "digest", "failing_after",
                    "owner_monitor", "created_at"]  # fmt: skip
    list_filter = ["kind", "digest"]
    list_select_related = ["team", "owner_monitor"]
    search_fields = ["name", "team__name"]
    fields = ["name", "team", "kind_label", "masked_settings", "events", "digest",
              "digest_at", "failing_after", "owner_monitor", "deliveries_link",
              "created_at", "updated_at"]  # fmt: skip
    readonly_fields = ["team", "kind_label", "masked_settings", "owner_monitor",
                       "deliveries_link", "created_at", "updated_at"]  # fmt: skip

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # kinds validate their settings in the dashboard and API

    @admin.display(description="Kind", ordering="kind")
    def kind_label(self, channel: Channel) -> str:
        kind = kinds.kind_for(channel.kind)
        return kind.label if kind else f"{channel.kind} (not installed)"

    @admin.display(description="Settings")
    def masked_settings(self, channel: Channel) -> str:
        kind = kinds.kind_for(channel.kind)
        return json.dumps(kind.masked(channel.settings) if kind else {})

    @admin.display(description="Deliveries")
    def deliveries_link(self, channel: Channel) -> str:
        return changelist_link(
            ChannelDelivery, "Deliveries", channel__id__exact=channel.pk
        )
