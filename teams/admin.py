from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import ngettext

from monitors.admin.shared import TeamFilter, report_action
from teams.activity import Actor, Kind, Via, record
from teams.models import Activity, Invitation


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    """Invitations are made on the team page (the link's token exists only in
    the e-mail); here they are listed and can be withdrawn."""

    list_display = ["email", "team", "role", "invited_by", "created_at", "state"]
    list_filter = ["role", TeamFilter]
    list_select_related = ["team", "invited_by"]
    search_fields = ["email", "team__name", "team__slug"]
    readonly_fields = [
        "team",
        "email",
        "role",
        "invited_by",
        "created_at",
        "expires_at",
        "accepted_at",
        "accepted_by",
        "revoked_at",
    ]
    exclude = ["token_hash"]
    actions = ["withdraw"]

    @admin.display(description="State")
    def state(self, obj: Invitation) -> str:
        return obj.unusable_reason(timezone.now()) or "Waiting to be used"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_withdraw_permission(self, request: HttpRequest) -> bool:
        # The rows are never edited here, but withdrawing one is a change:
        # staff who may only view invitations do not get the action.
        return request.user.has_perm("teams.change_invitation")

    @admin.action(
        description="Withdraw the selected invitations", permissions=["withdraw"]
    )
    def withdraw(self, request: HttpRequest, queryset: QuerySet[Invitation]) -> None:
        now = timezone.now()
        actor = Actor.of(request, via=Via.ADMIN)
        count = 0
        for invitation in queryset:
            if invitation.revoke(now):
                record(actor, invitation.team_id, Kind.INVITATION_WITHDRAWN,
                       email=invitation.email)  # fmt: skip
                count += 1
        report_action(
            self,
            request,
            ngettext("Withdrew %d invitation.", "Withdrew %d invitations.", count)
            % count,
            done=count,
            left=queryset.count() - count,
            why_left="already used or withdrawn",
        )


@admin.register(Activity)
class ActivityAdmin(admin.ModelAdmin):
    """The activity log, read-only: entries are never added, changed or
    deleted by hand (the retention purge removes old ones)."""

    list_display = ["at", "team", "actor", "what", "monitor_name", "via", "address"]
    # A date filter, not date_hierarchy: the hierarchy's links are read from
    # every entry's date (a DISTINCT over the whole log on each load).
    list_filter = ["kind", "via", "at", TeamFilter]
    list_select_related = ["team"]
    search_fields = ["user_name", "key_name", "monitor_name", "team__name"]
    search_help_text = "Person, API key, monitor or team."
    fields = [
        "at",
        "team",
        "kind",
        "via",
        "actor",
        "what",
        "monitor",
        "monitor_name",
        "details",
        "address",
    ]
    readonly_fields = fields
    show_full_result_count = False  # a count of 100,000 rows on every page

    @admin.display(description="Who")
    def actor(self, obj: Activity) -> str:
        return obj.actor_words

    @admin.display(description="What")
    def what(self, obj: Activity) -> str:
        return obj.what_words

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    # Entries are never deleted one by one, but go with their team.
    deleted_with_owner = True

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
