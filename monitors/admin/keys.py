"""API keys in the admin: which are in use, revoked or expired."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.translation import ngettext

from monitors.admin.shared import (
    ChangedFieldsOnlyMixin,
    TeamFilter,
    report_action,
    search_terms,
)
from monitors.admin.teams import _admin
from monitors.models import (
    KEY_LOOKUP_LENGTH,
    KEY_PREFIX,
    ApiKey,
)
from teams.activity import (
    Kind,
    record,
)


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
    list_filter = [KeyStateFilter, "scope", TeamFilter]
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

    # A key is revoked, not deleted: a deleted key stops working with nothing
    # in the team's log, and a revoked one stays listed with its last use.
    # Keys still go with their team.
    deleted_with_owner = True

    def has_delete_permission(
        self, request: HttpRequest, obj: ApiKey | None = None
    ) -> bool:
        return False

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
