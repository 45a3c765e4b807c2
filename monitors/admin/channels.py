"""Notification channels in the admin."""

from __future__ import annotations

import json
from datetime import time
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from checks.deleting import delete_channels
from checks.models import ChannelDelivery, Delivery
from checks.notify import channels as channel_events
from checks.notify import digests, kinds
from checks.notify.transports import words_for_test_message
from monitors.admin.shared import (
    ChangedFieldsOnlyMixin,
    CountedDeleteMixin,
    KindFilter,
    TeamFilter,
    changelist_link,
    kind_words,
)
from monitors.admin.teams import _admin
from monitors.models import (
    Channel,
    MonitorChannel,
)
from monitors.wire.channel import ChannelInputSerializer
from teams.activity import Kind, record


class ChannelAdminForm(forms.ModelForm):
    """The events a channel wants, picked from the known ones (the model
    stores a JSON list the dashboard and the API fill the same way)."""

    events = forms.MultipleChoiceField(
        choices=Channel.Event.choices,
        widget=forms.CheckboxSelectMultiple,
        required=False,
    )

    class Meta:
        model = Channel
        fields = ["name", "events", "digest", "digest_at", "failing_after"]

    # The API's name for each field of this form.
    API_NAMES = {"name": "name", "events": "events", "digest": "digest",
                 "digest_at": "digestAt", "failing_after": "failingAfter"}  # fmt: skip

    def clean(self) -> dict[str, Any]:
        """What changed is held to the API's rules (ChannelInputSerializer,
        which the dashboard's form uses too), e.g. 1 to 100 failed checks
        before "failing"."""
        cleaned = super().clean()
        changed = {
            self.API_NAMES[name]: cleaned[name] or None
            if name in ("digest", "digest_at")
            else cleaned[name]
            for name in self.changed_data
            if name in cleaned
        }
        if not changed:
            return cleaned
        rules = ChannelInputSerializer(
            data=changed, partial=True, context={"channel": self.instance}
        )
        if not rules.is_valid():
            fields = {api: name for name, api in self.API_NAMES.items()}
            for api, problems in rules.errors.items():
                for problem in problems:
                    self.add_error(fields.get(api), str(problem))
        return cleaned


@admin.register(Channel)
class ChannelAdmin(CountedDeleteMixin, ChangedFieldsOnlyMixin, admin.ModelAdmin):
    """A team's channels. Settings hold secrets: shown masked by the kind,
    never edited here (the dashboard and the API validate them)."""

    list_display = ["name", "team", "kind_label", "digest", "failing_after",
                    "owner_monitor", "created_at"]  # fmt: skip
    form = ChannelAdminForm
    list_filter = [KindFilter, "digest", TeamFilter]
    list_select_related = ["team", "owner_monitor"]
    search_fields = ["name", "team__name"]
    search_help_text = "Channel or team name."
    fields = ["name", "team", "kind_label", "masked_settings", "events", "digest",
              "digest_at", "failing_after", "owner_monitor", "deliveries_link",
              "created_at", "updated_at"]  # fmt: skip
    readonly_fields = ["where_to_change", "team", "kind_label", "masked_settings",
                       "owner_monitor", "deliveries_link", "created_at",
                       "updated_at"]  # fmt: skip

    actions = ["send_test"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # kinds validate their settings in the dashboard and API

    @admin.action(description="Send a test message to the selected channels",
                  permissions=["change"])  # fmt: skip
    def send_test(self, request: HttpRequest, queryset: QuerySet) -> None:
        """The Channels page's "Send test", sent now so the message can say
        what each service answered."""
        for channel in queryset.order_by("name"):
            if channel.owner_monitor_id is not None:
                self.message_user(
                    request,
                    f"Left “{channel.name}” alone: a monitor's own channel is "
                    "tested from its monitor.",
                    messages.WARNING,
                )
                continue
            delivery = channel_events.send_test(channel)
            sent = delivery.status == Delivery.Status.DELIVERED
            self.message_user(
                request,
                words_for_test_message(channel.name, delivery),
                messages.SUCCESS if sent else messages.ERROR,
            )

    # A monitor's own channels are its Firecrawl fields (checks.notify.own):
    # the API and the dashboard change them through the monitor only, so here
    # they are shown, never changed or deleted.
    def has_change_permission(
        self, request: HttpRequest, obj: Channel | None = None
    ) -> bool:
        own = obj is not None and obj.owner_monitor_id is not None
        return not own and super().has_change_permission(request, obj)

    def has_delete_permission(
        self, request: HttpRequest, obj: Channel | None = None
    ) -> bool:
        own = obj is not None and obj.owner_monitor_id is not None
        return not own and super().has_delete_permission(request, obj)

    def get_deleted_objects(
        self, objs: Any, request: HttpRequest
    ) -> tuple[list[str], dict[str, int], set[str], list[str]]:
        """As CountedDeleteMixin's, refusing a choice that holds an own
        channel, and saying why ("delete selected" asks no object's
        permission)."""
        objs = list(objs)
        deleted, counts, perms_needed, protected = super().get_deleted_objects(
            objs, request
        )
        if any(not self.has_delete_permission(request, obj) for obj in objs):
            perms_needed.add("a monitor's own channel: change it with its monitor")
        return deleted, counts, perms_needed, protected

    def get_fields(self, request: HttpRequest, obj: Channel | None = None) -> Any:
        fields = super().get_fields(request, obj)
        if obj is not None and obj.owner_monitor_id is not None:
            return ["where_to_change", *fields]
        return fields

    @admin.display(description="Where to change it")
    def where_to_change(self, channel: Channel) -> str:
        monitor = channel.owner_monitor
        return format_html(
            "The monitor “{}”'s own channel: its <code>webhook</code>, "
            "<code>notification.email</code> or <code>notification.slack</code> "
            "in the API. Change or remove it with its monitor, on "
            '<a href="{}">its edit page</a> or through the API '
            "(<code>PATCH /v2/monitor/{}</code>), not here.",
            monitor.name,
            reverse("monitor-edit", args=[monitor.pk]),
            monitor.pk,
        )

    def deleted_along(self, objs: list[Channel]) -> list[QuerySet]:
        return [
            Delivery.objects.filter(channel__in=objs),
            MonitorChannel.objects.filter(channel__in=objs),
        ]

    def delete_model(self, request: HttpRequest, obj: Channel) -> None:
        self.delete_queryset(request, Channel.objects.filter(pk=obj.pk))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        # For good, as on the Channels page and through the API (a channel
        # keeps no history of its own: its deliveries go with it).
        with transaction.atomic():
            for channel in queryset:
                record(_admin(request), channel.team_id, Kind.CHANNEL_DELETED,
                       name=channel.name)  # fmt: skip
            delete_channels(queryset)

    def save_model(
        self, request: HttpRequest, obj: Channel, form: Any, change: bool
    ) -> None:
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            if {"digest", "digest_at"} & set(form.changed_data):
                # A digest channel is told nothing at once: it waits for its
                # due time, which the dashboard and the API set and the form
                # does not show.
                if obj.digest and obj.digest_at is None:
                    obj.digest_at = time(9, 0)  # as through the API
                digests.schedule(obj, timezone.now())
                obj.save(update_fields=["digest_at", "digest_since", "next_digest_at"])
        # As on the Channels page and through the API: the team's log says so.
        if form.changed_data:
            record(_admin(request), obj.team_id, Kind.CHANNEL_EDITED, name=obj.name)

    @admin.display(description="Kind", ordering="kind")
    def kind_label(self, channel: Channel) -> str:
        return kind_words(channel.kind)

    @admin.display(description="Settings")
    def masked_settings(self, channel: Channel) -> str:
        kind = kinds.kind_for(channel.kind)
        if kind is None:
            return json.dumps({})
        # Nobody changes settings here: addresses in shape only.
        shown = kind.shown_in_shape(channel.team, channel.settings)
        return json.dumps(shown, ensure_ascii=False)

    @admin.display(description="Deliveries")
    def deliveries_link(self, channel: Channel) -> str:
        return changelist_link(
            ChannelDelivery, "Deliveries", channel__id__exact=channel.pk
        )
