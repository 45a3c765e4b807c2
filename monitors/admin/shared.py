"""What every admin page here (and checks.admin) shares: display helpers that
escape what came from a user or a page, links, search terms, and the mixins
that save only changed fields and count what a delete takes with it."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.text import smart_split, unescape_string_literal
from django.utils.translation import ngettext

from checks.notify import kinds
from monitors.models import Team


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


class TeamFilter(admin.SimpleListFilter):
    """By team, without a link to every team: with 5,000 teams each list
    carrying this filter was 400 KB of team links. A team is chosen from the
    Team list's links (its monitors, say) or found with the search box; the
    filter then shows it."""

    title = "team"
    parameter_name = "team__id__exact"  # Django's own name: links keep working
    # Where a row names its team: a check or a delivery through its monitor.
    team_field = "team_id"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        value = self.value()
        if not value or not value.isdecimal():
            return []
        return [(str(team.pk), team.name) for team in Team.objects.filter(pk=value)]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        if not value:
            return queryset
        if not value.isdecimal():
            return queryset.none()
        return queryset.filter(**{self.team_field: value})


class MonitorTeamFilter(TeamFilter):
    team_field = "monitor__team_id"


class ChannelTeamFilter(TeamFilter):
    team_field = "channel__team_id"


def kind_words(name: str) -> str:
    """A channel kind as its class names it ("Chat and push (Apprise)")."""
    kind = kinds.kind_for(name)
    return kind.label if kind else f"{name} (not installed)"


class KindFilter(admin.SimpleListFilter):
    """Channel kinds in words, from the registry: Django's own filter showed
    the stored names (`slack_webhook`), read with a DISTINCT over every row."""

    title = "kind"
    parameter_name = "kind"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        known = [*kinds.all_kinds(), *kinds.own_kinds()]
        return [(kind.name, kind.label) for kind in known]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        return queryset.filter(kind=value) if value else queryset


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


def _may_delete_along(model_admin: admin.ModelAdmin, request: HttpRequest) -> bool:
    """Whether rows of this admin's model may go with the object deleted. A
    log that nobody may delete by hand (`deleted_with_owner`) still goes with
    what it belongs to: otherwise no team with a history could be deleted."""
    if getattr(model_admin, "deleted_with_owner", False):
        return True
    return model_admin.has_delete_permission(request)


class CountedDeleteMixin:
    """The delete confirmation says how many rows of each kind go with the
    objects instead of listing them one by one: a check or a monitor takes
    thousands of page results and deliveries with it, and Django's list
    loads every one of them and links to each (seconds for a monitor with a
    long history). Each admin names in `deleted_along` what goes with its
    objects, one COUNT each; missing permissions still stop the deletion,
    as in Django's own."""

    admin_site: admin.AdminSite

    def deleted_along(self, objs: list[Any]) -> list[QuerySet]:
        """The rows that go with `objs`, one queryset per kind."""
        raise NotImplementedError

    def get_deleted_objects(
        self, objs: Any, request: HttpRequest
    ) -> tuple[list[str], dict[str, int], set[str], list[str]]:
        objs = list(objs)
        if not objs:
            return [], {}, set(), []
        counts = {objs[0]._meta.model: len(objs)}
        for rows in self.deleted_along(objs):
            counts[rows.model] = rows.count()
        perms_needed = {
            model._meta.verbose_name
            for model, count in counts.items()
            if count
            and self.admin_site.is_registered(model)
            and not _may_delete_along(self.admin_site.get_model_admin(model), request)
        }
        model_count = {
            str(model._meta.verbose_name_plural): count
            for model, count in counts.items()
            if count
        }
        return [admin_link(obj) for obj in objs], model_count, perms_needed, []
