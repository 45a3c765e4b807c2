from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from teams.models import Invitation


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    """Invitations are made on the team page (the link's token exists only in
    the e-mail); here they are listed and can be withdrawn."""

    list_display = ["email", "team", "role", "invited_by", "created_at", "state"]
    list_filter = ["role", "team"]
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

    @admin.action(description="Withdraw the selected invitations")
    def withdraw(self, request: HttpRequest, queryset: QuerySet[Invitation]) -> None:
        now = timezone.now()
        count = sum(invitation.revoke(now) for invitation in queryset)
        self.message_user(request, f"{count} invitation(s) withdrawn.")
