"""Monitors in the admin: the list with its filters, targets and e-mail
recipients inline, schedules in words beside the cron, times in the
monitor's own zone, and Pause/Resume actions that call the model."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.utils import flatten_fieldsets
from django.db import transaction
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.html import format_html_join
from django.utils.translation import ngettext

from checks.deleting import delete_for_good, delete_history, delete_monitors
from checks.models import Check, Delivery, PageResult, PageState
from checks.notify import consent
from checks.notify.kinds.base import mask_url
from monitors import clock, muting, rules, running
from monitors.admin.monitor_form import (
    LAST_CHECK_SECTION,
    MONITOR_SECTIONS,
    MonitorAdminForm,
    _in_zone,
    target_rows,
)
from monitors.admin.shared import (
    CountedDeleteMixin,
    MonitorTeamFilter,
    TeamFilter,
    admin_link,
    changelist_link,
    json_block,
    report_action,
    search_terms,
    summary_text,
    with_masked_headers,
)
from monitors.admin.teams import _admin
from monitors.dashboard import runs_said
from monitors.dashboard.forms.fields import MonitorFields
from monitors.editing import update_monitor
from monitors.models import (
    EmailRecipient,
    Monitor,
    Tag,
    Target,
)
from monitors.schedule import Schedule
from monitors.schedule_words import describe
from teams.activity import (
    Kind,
    monitor_fields,
    record,
    record_monitor_change,
)


class MutedFilter(admin.SimpleListFilter):
    """Monitors whose notifications are muted now (an ended mute is none)."""

    title = "notifications"
    parameter_name = "muted"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Muted"), ("no", "Not muted")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        now = timezone.now()
        if self.value() == "yes":
            return queryset.filter(pk__in=Monitor.objects.muted(now).values("pk"))
        if self.value() == "no":
            return queryset.exclude(pk__in=Monitor.objects.muted(now).values("pk"))
        return queryset


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
        options = target.kind.options(target) if target.kind is not None else {}
        if "scrapeOptions" in options:
            options["scrapeOptions"] = with_masked_headers(options["scrapeOptions"])
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
        "added_by",
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


@admin.register(Monitor)
class MonitorAdmin(CountedDeleteMixin, admin.ModelAdmin):
    """A live monitor is edited with the dashboard's form and rules (see
    MonitorAdminForm); a deleted one, or one seen without the right to
    change it, is shown read-only as stored."""

    form = MonitorAdminForm
    list_display = [
        "name",
        "team",
        "tag_list",
        "state",
        "muted",
        "schedule",
        "next_run",
        "last_run",
        "target_count",
        "last_check",
        "created_at",
    ]
    list_filter = ["status", MutedFilter, DeletedFilter, TeamFilter, "judge_enabled"]
    list_select_related = ["team"]
    # The search itself is get_search_results; this only turns the box on.
    search_fields = ["name"]
    search_help_text = "Monitor name, team, or part of a target URL."
    actions = ["run_now_selected", "pause_selected", "resume_selected"]
    READ_ONLY_FIELDSETS = [
        (
            None,
            {"fields": ["name", "tag_list", "team", "status", "deleted_at", "checks"]},
        ),
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
        (
            "Judging",
            {
                "fields": [
                    "judge_enabled",
                    "goal",
                    "ignore_lines",
                    "which_changes_matter",
                ]
            },
        ),
        ("Loading pages", {"fields": ["fetch_with"]}),
        (
            "Notifications",
            {
                "fields": [
                    "muted",
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
        "tag_list",
        "deleted_at",
        "checks",
        "schedule_words",
        "next_run",
        "last_run",
        "current_check_id",
        "judge_enabled",
        "muted",
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
        return (
            super()
            .get_queryset(request)
            .annotate(target_total=Count("targets", distinct=True))
            .prefetch_related("tags")
        )

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
            # No `by`: an administrator is not of the team, and the address
            # asked to confirm is told the team added it.
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

    def deleted_along(self, objs: list[Monitor]) -> list[QuerySet]:
        return [
            Check.objects.filter(monitor__in=objs),
            PageResult.objects.filter(check_run__monitor__in=objs),
            Delivery.objects.filter(monitor__in=objs),
            PageState.objects.filter(monitor__in=objs),
            Target.objects.filter(monitor__in=objs),
            EmailRecipient.objects.filter(monitor__in=objs),
        ]

    # Deleting here is for good, with the history (checks.deleting): what
    # the admin is for when a monitor must go now. The dashboard and the API
    # only mark one deleted and keep its history for its retention period.
    # The confirmation pages say so (templates/admin/monitors/monitor/), and
    # the team's log tells this deletion from theirs.
    #
    # The history goes first, a batch a transaction, then the monitor and
    # its team's log entry (and the admin's) in one transaction
    # (checks.deleting.delete_for_good).
    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: Any = None
    ) -> HttpResponse:
        # Django runs a confirmed delete_view in one transaction: the
        # batches go before it, once the delete is confirmed and allowed
        # (the monitor's and, as Django asks, what goes along with it).
        if request.method == "POST" and request.POST.get("post"):
            monitor = self.get_object(request, object_id)
            if monitor is not None and self.has_delete_permission(request, monitor):
                _, _, refused, protected = self.get_deleted_objects([monitor], request)
                if not refused and not protected:
                    delete_history(Monitor.objects.filter(pk=monitor.pk))
        return super().delete_view(request, object_id, extra_context)

    def delete_model(self, request: HttpRequest, obj: Monitor) -> None:
        self.delete_queryset(request, Monitor.objects.filter(pk=obj.pk))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        ids = list(queryset.values_list("pk", flat=True))
        monitors = Monitor.objects.filter(pk__in=ids)

        def rows() -> None:
            for monitor in monitors:
                # The entry keeps the monitor's name when the monitor is gone.
                record(_admin(request), monitor.team_id, Kind.MONITOR_DELETED,
                       monitor, for_good=True)  # fmt: skip
            # With what a check started meanwhile left, and the baselines.
            delete_monitors(monitors)

        # Outside a transaction for the bulk action; nothing left to do here
        # for delete_view, which took the history before its own.
        delete_for_good(monitors, rows)

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

    @admin.display(description="Which changes matter")
    def which_changes_matter(self, monitor: Monitor) -> str:
        return " ".join(monitor.change_rules_words) or "Every change"

    @admin.display(description="Tags")
    def tag_list(self, monitor: Monitor) -> str:
        return ", ".join(monitor.tag_names) or "—"

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

    @admin.display(description="Notifications muted until", ordering="muted_until")
    def muted(self, monitor: Monitor) -> str:
        until = monitor.mute_ends_at
        if until is None:
            return "—"
        return muting.until_words(until, clock.team_zone(monitor.team))

    @admin.display(description="Targets", ordering="target_total")
    def target_count(self, monitor: Monitor) -> int:
        return monitor.target_total

    @admin.display(description="Last check")
    def last_check(self, monitor: Monitor) -> str:
        return summary_text(monitor.last_check_summary)

    @admin.display(description="Checks")
    def checks(self, monitor: Monitor) -> str:
        return changelist_link(Check, "All checks of this monitor", monitor=monitor.pk)

    @admin.display(description="Webhook")
    def webhook_json(self, monitor: Monitor) -> str:
        # Shown on the read-only page: the address in shape only, as for the
        # dashboard's viewers (the edit form has it whole, for who may change it).
        webhook = with_masked_headers(monitor.webhook)
        if isinstance(webhook, dict) and isinstance(webhook.get("url"), str):
            webhook = webhook | {"url": mask_url(webhook["url"])}
        return json_block(webhook)

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

    @admin.action(description="Run a check of the selected monitors now",
                  permissions=["change"])  # fmt: skip
    def run_now_selected(self, request: HttpRequest, queryset: QuerySet) -> None:
        """The dashboard's "Run now" on each (monitors.running): paused or
        deleted ones and those running a check already are left alone, and
        named."""
        runs = running.run_each(
            # Deleted ones too (the admin lists them), to be named as such.
            Monitor.objects.filter(pk__in=queryset.values("pk"))
            .select_related("team")
            .order_by("name", "pk"),
            _admin(request),
        )
        for level, words in runs_said.said(runs):
            self.message_user(request, words, level)

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


@admin.register(EmailRecipient)
class EmailRecipientAdmin(admin.ModelAdmin):
    """Every monitor's e-mail addresses in one list, so someone asking to be
    taken off is found on each monitor that mails them. Consent records are
    never written by hand; "stop e-mails" does what the unsubscribe link in
    the e-mails does."""

    list_display = ["email", "monitor_link", "team", "status", "source",
                    "added_by", "confirmed_at", "unsubscribed_at",
                    "created_at"]  # fmt: skip
    list_filter = ["status", "source", MonitorTeamFilter]
    list_select_related = ["monitor__team"]
    search_fields = ["email", "monitor__name", "monitor__team__name"]
    search_help_text = "Address, monitor or team."
    show_full_result_count = False
    fields = ["email", "monitor", "status", "source", "added_by",
              "confirmation_sent_at", "confirmed_at", "unsubscribed_at",
              "created_at"]  # fmt: skip
    readonly_fields = fields
    actions = ["stop_emails"]
    # Never deleted by hand (that would drop the record of consent), but
    # they go with their monitor.
    deleted_with_owner = True

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_stop_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("monitors.change_emailrecipient")

    @admin.display(description="Monitor", ordering="monitor__name")
    def monitor_link(self, recipient: EmailRecipient) -> str:
        return admin_link(recipient.monitor)

    @admin.display(description="Team", ordering="monitor__team__name")
    def team(self, recipient: EmailRecipient) -> str:
        return recipient.monitor.team.name

    @admin.action(description="Stop e-mails to the selected addresses",
                  permissions=["stop"])  # fmt: skip
    def stop_emails(self, request: HttpRequest, queryset: QuerySet) -> None:
        count = 0
        for recipient in queryset.select_related("monitor"):
            if consent.unsubscribe_recipient(recipient):
                record(_admin(request), recipient.monitor.team_id,
                       Kind.EMAIL_UNSUBSCRIBED, recipient.monitor,
                       email=recipient.email)  # fmt: skip
                count += 1
        report_action(
            self,
            request,
            ngettext(
                "Stopped the e-mails to %d address.",
                "Stopped the e-mails to %d addresses.",
                count,
            )
            % count,
            done=count,
            left=queryset.count() - count,
            why_left="already unsubscribed",
        )


class TagForm(forms.ModelForm):
    """A new name under the dashboard's rules, and one the team's other tags
    do not have in any case (the database refuses it with a 500)."""

    class Meta:
        model = Tag
        fields = ["name"]

    def clean_name(self) -> str:
        problem = rules.tag_error(self.cleaned_data["name"])
        if problem:
            raise forms.ValidationError(problem)
        name = rules.clean_tags([self.cleaned_data["name"]])[0]
        # Matched here, as Tag.objects.named does: SQLite's LOWER() folds
        # only ASCII letters.
        others = Tag.objects.filter(team=self.instance.team_id).exclude(
            pk=self.instance.pk
        )
        if any(other.name.lower() == name.lower() for other in others):
            raise forms.ValidationError(f"The team already has a tag “{name}”.")
        return name


@admin.register(Tag)
class TagAdmin(admin.ModelAdmin):
    """A team's tags, with how many live monitors each groups. Renaming one
    renames it on all its monitors; deleting one takes it off them."""

    form = TagForm
    list_display = ["name", "team", "monitor_count", "created_at"]
    list_filter = [TeamFilter]
    list_select_related = ["team"]
    search_fields = ["name", "team__name"]
    fields = ["name", "team", "monitor_count", "created_at"]
    readonly_fields = ["team", "monitor_count", "created_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Tag]:
        live = Q(monitors__deleted_at__isnull=True)
        return (
            super()
            .get_queryset(request)
            .annotate(live_monitors=Count("monitors", filter=live))
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # tags are made on monitors, in the dashboard or the API

    @admin.display(description="Monitors", ordering="live_monitors")
    def monitor_count(self, tag: Tag) -> int:
        return tag.live_monitors  # type: ignore[attr-defined]
