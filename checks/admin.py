"""Read-only admin for what the workers record: checks, page results,
snapshots and baselines. Rows are written by checks.runner with conditional
updates; an admin form must never write them back. Superusers (or staff with
the delete permission) may delete, e.g. to clear out a runaway check.

Page-derived content (URLs, errors, extracted text, diffs) is only ever shown
escaped.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.translation import ngettext

from checks.content import ExtractionError
from checks.models import (
    ChannelDelivery,
    Check,
    CheckBatch,
    Delivery,
    DeliveryAttempt,
    EmailDelivery,
    PageResult,
    PageState,
    Snapshot,
    WebhookDelivery,
)
from checks.notify import deliveries, events
from checks.notify.kinds.base import mask_url
from monitors.admin.shared import (
    ChannelTeamFilter,
    CountedDeleteMixin,
    KindFilter,
    MonitorTeamFilter,
    admin_link,
    changelist_link,
    json_block,
    kind_words,
    report_action,
    summary_text,
)

# Page results shown inline on a check; the rest are one click away.
INLINE_PAGE_LIMIT = 50
# Characters of snapshot text / diff shown on a change page.
PREVIEW_CHARS = 20_000


def preview(text: str | None) -> str:
    if not text:
        return "—"
    cut = text[:PREVIEW_CHARS]
    more = (
        f"\n… ({len(text) - len(cut):,} more characters)"
        if len(text) > len(cut)
        else ""
    )
    return format_html('<pre class="pw-preview">{}{}</pre>', cut, more)


class ReadOnlyMixin:
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class LimitedInlineFormSet(BaseInlineFormSet):
    limit = INLINE_PAGE_LIMIT

    def get_queryset(self) -> QuerySet:
        if not hasattr(self, "_limited_queryset"):
            self._limited_queryset = super().get_queryset()[: self.limit]
        return self._limited_queryset


class PageResultInline(ReadOnlyMixin, admin.TabularInline):
    model = PageResult
    fk_name = "check_run"
    formset = LimitedInlineFormSet
    extra = 0
    can_delete = False
    show_change_link = True
    fields = ["url", "status", "status_code", "error", "created_at"]
    readonly_fields = fields
    verbose_name_plural = f"page results (first {INLINE_PAGE_LIMIT})"


@admin.register(Check)
class CheckAdmin(CountedDeleteMixin, ReadOnlyMixin, admin.ModelAdmin):
    list_display = [
        "created_at",
        "status",
        "trigger",
        "monitor_link",
        "scheduled_for",
        "started_at",
        "duration",
        "summary_line",
        "credits",
    ]
    # A date filter, not date_hierarchy: the hierarchy's links are read from
    # every row's date (a DISTINCT over the whole table on each load).
    list_filter = ["status", "trigger", "created_at", MonitorTeamFilter]
    list_select_related = ["monitor"]
    search_fields = ["monitor__name"]
    show_full_result_count = False
    inlines = [PageResultInline]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "monitor",
                    "status",
                    "trigger",
                    "error",
                    "all_pages",
                ]
            },
        ),
        (
            "Timing",
            {
                "fields": [
                    "created_at",
                    "scheduled_for",
                    "started_at",
                    "finished_at",
                    "heartbeat_at",
                    "duration",
                    "attempts",
                ]
            },
        ),
        (
            "Pages and credits",
            {
                "fields": [
                    "pages_total",
                    "pages_done",
                    "estimated_credits",
                    "reserved_credits",
                    "actual_credits",
                    "billing_status",
                ]
            },
        ),
        (
            "Results",
            {"fields": ["summary_json", "target_results_json", "notification_json"]},
        ),
    ]
    readonly_fields = [
        "all_pages",
        "duration",
        "summary_json",
        "target_results_json",
        "notification_json",
    ]

    def deleted_along(self, objs: list[Check]) -> list[QuerySet]:
        return [
            PageResult.objects.filter(check_run__in=objs),
            CheckBatch.objects.filter(check_run__in=objs),
            Delivery.objects.filter(check_run__in=objs),
        ]

    def delete_model(self, request: HttpRequest, obj: Check) -> None:
        Check.objects.filter(pk=obj.pk).discard()

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        queryset.discard()

    @admin.display(description="Monitor", ordering="monitor__name")
    def monitor_link(self, check: Check) -> str:
        return admin_link(check.monitor)

    @admin.display(description="Duration")
    def duration(self, check: Check) -> str:
        seconds = check.duration_seconds
        return "—" if seconds is None else f"{seconds:.1f} s"

    @admin.display(description="Summary")
    def summary_line(self, check: Check) -> str:
        return summary_text(check.summary)

    @admin.display(description="Credits", ordering="actual_credits")
    def credits(self, check: Check) -> str:
        if check.actual_credits is not None:
            return str(check.actual_credits)
        return f"~{check.estimated_credits} (estimated)"

    @admin.display(description="Pages")
    def all_pages(self, check: Check) -> str:
        return changelist_link(
            PageResult, f"All {check.pages.count()} page results", check_run=check.pk
        )

    @admin.display(description="Summary")
    def summary_json(self, check: Check) -> str:
        return json_block(check.summary)

    @admin.display(description="Target results")
    def target_results_json(self, check: Check) -> str:
        return json_block(check.target_results)

    @admin.display(description="Notification status")
    def notification_json(self, check: Check) -> str:
        return json_block(check.notification_status)


@admin.register(PageResult)
class PageResultAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["url", "status", "check_link", "status_code", "created_at"]
    list_filter = ["status", "verdict"]
    # The page's checks in a query of their own, not joined: on PostgreSQL a
    # search for a common word joined 100,000 rows to their checks in a
    # nested loop (10 s for one page of the list).
    list_select_related = []
    search_fields = ["url"]
    show_full_result_count = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[PageResult]:
        return super().get_queryset(request).prefetch_related("check_run")

    fields = [
        "check_run",
        "url",
        "status",
        "status_code",
        "error",
        "error_kind",
        "target_id",
        "previous_scrape_id",
        "current_scrape_id",
        "previous_snapshot",
        "current_snapshot",
        "metadata_json",
        "verdict",
        "judgment_json",
        "summary",
        "extraction_json",
        "diff_text",
        "created_at",
    ]
    readonly_fields = ["metadata_json", "judgment_json", "extraction_json", "diff_text"]

    @admin.display(description="Check", ordering="check_run__created_at")
    def check_link(self, page: PageResult) -> str:
        return admin_link(page.check_run)

    @admin.display(description="Metadata")
    def metadata_json(self, page: PageResult) -> str:
        return json_block(page.metadata)

    @admin.display(description="Judgment")
    def judgment_json(self, page: PageResult) -> str:
        return json_block(page.judgment)

    @admin.display(description="JSON extraction")
    def extraction_json(self, page: PageResult) -> str:
        return json_block(page.extraction)

    @admin.display(description="Diff")
    def diff_text(self, page: PageResult) -> str:
        text = (page.diff or {}).get("text")
        return preview(text if isinstance(text, str) else None)


@admin.register(Snapshot)
class SnapshotAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["content_hash", "format", "size", "created_at"]
    search_fields = ["=content_hash"]
    show_full_result_count = False
    fields = ["content_hash", "format", "size", "created_at", "content"]
    readonly_fields = ["content"]

    @admin.display(description="Content")
    def content(self, snapshot: Snapshot) -> str:
        try:
            return preview(snapshot.text)
        except (ValueError, ExtractionError):  # a damaged row, not a 500
            return "(could not be read)"


@admin.register(PageState)
class PageStateAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["url", "monitor", "presence", "fetched_at", "updated_at"]
    list_filter = ["presence"]
    list_select_related = ["monitor"]
    search_fields = ["url", "monitor__name"]
    show_full_result_count = False
    fields = [
        "monitor",
        "target_id",
        "url",
        "url_hash",
        "presence",
        "snapshot",
        "normalized_hash",
        "scrape_id",
        "fetched_at",
        "cached_at",
        "metadata_json",
        "updated_at",
    ]
    readonly_fields = ["metadata_json"]

    @admin.display(description="Metadata")
    def metadata_json(self, state: PageState) -> str:
        return json_block(state.metadata)


# --- Notification outbox (rows written by checks.notify.deliveries) ---------


class DeliveryAttemptInline(ReadOnlyMixin, admin.TabularInline):
    model = DeliveryAttempt
    extra = 0
    can_delete = False
    fields = [
        "number",
        "started_at",
        "duration_ms",
        "success",
        "status_code",
        "response",
        "error",
    ]
    readonly_fields = fields

    @admin.display(description="Response")
    def response(self, attempt: DeliveryAttempt) -> str:
        # The receiver's answer, capped when stored; shown as text.
        return preview(attempt.response_body)


class EventFilter(admin.SimpleListFilter):
    """Events in the dashboard's words, from the list each admin names (its
    `event_names`): Django's own filter showed the stored names, read with a
    DISTINCT over the whole outbox on every load."""

    title = "event"
    parameter_name = "event"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(name, events.words_for(name)) for name in model_admin.event_names]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        return queryset.filter(event=value) if value else queryset


class DeliveryAdmin(ReadOnlyMixin, admin.ModelAdmin):
    event_names: tuple[str, ...] = tuple(events.WEBHOOK_WORDS)
    list_display = [
        "created_at",
        "event_words",
        "status",
        "monitor_link",
        "destination",
        "attempts",
        "last_status_code",
        "next_attempt_at",
        "delivered_at",
    ]
    # As on checks: a date filter, not date_hierarchy.
    list_filter = ["status", EventFilter, "created_at", MonitorTeamFilter]
    list_select_related = ["monitor"]
    show_full_result_count = False
    inlines = [DeliveryAttemptInline]
    fields = [
        "event_words",
        "status",
        "monitor",
        "check_run",
        "webhook_id",
        "destination",
        "attempts",
        "next_attempt_at",
        "queued_at",
        "claimed_at",
        "delivered_at",
        "last_status_code",
        "last_error",
        "body_text",
        "created_at",
        "updated_at",
    ]
    readonly_fields = ["event_words", "destination", "body_text"]
    actions = ["retry_now"]

    def has_retry_permission(self, request: HttpRequest) -> bool:
        # The rows are never edited here, but a retry changes one: staff who
        # may only view deliveries do not get the action.
        opts = self.opts
        return request.user.has_perm(f"{opts.app_label}.change_{opts.model_name}")

    @admin.action(description="Retry the selected deliveries now",
                  permissions=["retry"])  # fmt: skip
    def retry_now(self, request: HttpRequest, queryset: QuerySet) -> None:
        """The dashboard's "Retry now": a waiting or failed delivery is due at
        once and queued; one delivered, being sent or cancelled is left."""
        count = sum(deliveries.retry_now(delivery) for delivery in queryset)
        report_action(
            self,
            request,
            ngettext("Retrying %d delivery now.", "Retrying %d deliveries now.", count)
            % count,  # fmt: skip
            done=count,
            left=queryset.count() - count,
            why_left="delivered, being sent or cancelled",
        )

    @admin.display(description="Monitor", ordering="monitor__name")
    def monitor_link(self, delivery: Any) -> str:
        return admin_link(delivery.monitor)

    @admin.display(description="Event", ordering="event")
    def event_words(self, delivery: Any) -> str:
        return events.words_for(delivery.event)

    @admin.display(description="Kind", ordering="kind")
    def kind_words(self, delivery: Any) -> str:
        return kind_words(delivery.kind)

    @admin.display(description="Destination")
    def destination(self, delivery: Any) -> str:
        # Where the row went, as the model names it (an e-mail names its
        # address even when it holds a URL too). Text, not a link: a
        # user-chosen URL. In shape only, as for the dashboard's viewers: a
        # hook URL is often its receiver's credential, and here nobody may
        # change it.
        shown = delivery.destination
        return mask_url(shown) if shown and shown == delivery.url else shown

    @admin.display(description="Body")
    def body_text(self, delivery: Any) -> str:
        return preview(delivery.body)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(DeliveryAdmin):
    search_fields = ["url", "monitor__name", "webhook_id__exact"]
    search_help_text = "Webhook URL, monitor name or exact webhook id."


@admin.register(ChannelDelivery)
class ChannelDeliveryAdmin(DeliveryAdmin):
    event_names = tuple(events.CHANNEL_WORDS)
    list_display = ["created_at", "event_words", "status", "channel", "kind_words",
                    "monitor_link", "attempts", "last_error",
                    "next_attempt_at"]  # fmt: skip
    list_filter = ["status", KindFilter, EventFilter, "created_at",
                   ChannelTeamFilter]  # fmt: skip
    list_select_related = ["monitor", "channel"]
    search_fields = ["channel__name", "monitor__name"]
    search_help_text = "Channel or monitor name."
    fields = ["channel", "kind_words", *DeliveryAdmin.fields]
    readonly_fields = ["kind_words", *DeliveryAdmin.readonly_fields]


@admin.register(EmailDelivery)
class EmailDeliveryAdmin(DeliveryAdmin):
    event_names = tuple(events.EMAIL_WORDS)
    search_fields = ["email", "monitor__name"]
    search_help_text = "Address or monitor name."
    # An e-mail has no webhook id.
    fields = [name for name in DeliveryAdmin.fields if name != "webhook_id"]
