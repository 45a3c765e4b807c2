"""Teams in the admin: their members (a team always keeps an owner) and keys."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import Count, F, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.html import format_html

from checks.ai.allowance import MonthUse
from checks.deleting import delete_for_good, delete_history, delete_teams
from checks.models import AIUse, Check, Delivery, PageResult, month_start
from checks.notify import digests
from monitors.admin.shared import (
    ChangedFieldsOnlyMixin,
    CountedDeleteMixin,
    _when,
    changelist_link,
)
from monitors.models import (
    ApiKey,
    Channel,
    LastOwnerError,
    Membership,
    Monitor,
    Team,
)
from teams.activity import (
    Actor,
    Kind,
    Via,
    record,
)
from teams.forms import TimeZoneField
from teams.members import member_joined, member_left, renew_feed_links, role_changed
from teams.models import Activity, Invitation, listed


def _team_count(rows: QuerySet) -> Coalesce:
    """How many of `rows` (filtered on team=OuterRef("pk")) there are, as a
    subquery for annotate()."""
    counted = rows.order_by().values("team").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted), 0)


def _ai_this_month(total: Any) -> Coalesce:
    """`total` over the outer team's AI use this month, as a subquery."""
    rows = AIUse.objects.filter(team=OuterRef("pk")).this_month(timezone.now())
    summed = rows.order_by().values("team").annotate(n=total).values("n")
    return Coalesce(Subquery(summed), 0)


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


class MembershipForm(forms.ModelForm):
    """A saved row keeps its person: swapping them would put one person out
    and another in with neither logged, the first one's keys still working.
    Someone leaves by their row's delete box and joins on a new row, as on
    the Team page. The person is shown from the row, without the autocomplete
    box (one query a row to look up its chosen user)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is None:
            return
        user = self.fields["user"]
        user.disabled = True
        user.widget = forms.Select(
            choices=[(self.instance.user_id, str(self.instance.user))]
        )


class MembershipInline(admin.TabularInline):
    model = Membership
    form = MembershipForm
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


class TeamForm(forms.ModelForm):
    # Left empty, the zone is UTC, as a monitor's schedule without one is.
    time_zone = TimeZoneField(
        required=False,
        help_text="Daily and weekly digests go out at their time of day in "
        "this zone, for example Europe/Berlin (empty: UTC).",
    )

    class Meta:
        model = Team
        fields = ["name", "slug", "credit_allowance", "feeds_enabled", "time_zone"]


@admin.register(Team)
class TeamAdmin(CountedDeleteMixin, ChangedFieldsOnlyMixin, admin.ModelAdmin):
    list_display = [
        "name",
        "slug",
        "member_count",
        "monitor_count",
        "masked_webhook_secret",
        "credit_allowance",
        "ai_use",
        "created_at",
    ]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    form = TeamForm
    fields = [
        "name",
        "slug",
        "credit_allowance",
        "feeds_enabled",
        "time_zone",
        "masked_webhook_secret",
        "ai_use",
        "created_at",
    ]
    readonly_fields = ["masked_webhook_secret", "ai_use", "created_at"]
    inlines = [MembershipInline, TeamApiKeyInline]
    # The settings the team's activity log tells of when changed here, as
    # when they are changed on the dashboard. The slug is changed only here,
    # and is logged too: sign-in claims and createapikey name a team by it.
    logged_settings = (
        "name",
        "slug",
        "credit_allowance",
        "feeds_enabled",
        "time_zone",
    )

    def save_model(
        self, request: HttpRequest, obj: Team, form: Any, change: bool
    ) -> None:
        super().save_model(request, obj, form, change)
        if not change:
            return
        # A zone typed in another case, or left empty while UTC, is no change.
        changed = [
            name
            for name in form.changed_data
            if form.cleaned_data.get(name) != form.initial.get(name)
        ]
        if "time_zone" in changed:
            digests.reschedule_team(obj, timezone.now())
        for name in self.logged_settings:
            if name in changed:
                record(_admin(request), obj, Kind.TEAM_EDITED, setting=name,
                       value=form.cleaned_data[name],
                       was=form.initial.get(name))  # fmt: skip

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
            member_joined(actor, team, membership.user, role=membership.role,
                          member=membership.user.get_username())  # fmt: skip
            Invitation.objects.spend_for(team, membership.user, timezone.now())
        for membership, _ in formset.changed_objects:
            if was.get(membership.pk) != membership.role:
                role_changed(actor, membership, was.get(membership.pk))
        for membership in formset.deleted_objects:
            member_left(actor, team, membership.user)
        if formset.deleted_objects:
            # Nobody was asked about the feed links here: say so, and the
            # team's owners see a notice with the button on the Team page.
            names = listed([m.user.get_username() for m in formset.deleted_objects])
            self.message_user(
                request,
                f"If {names} copied the team's feed links, they still work. Renew "
                "them with the action “Renew feed links” (everyone else will need "
                "the new links), or leave it to the team's owners: their Team "
                "page says so.",
                messages.WARNING,
            )

    actions = ["rotate_webhook_secret", "renew_team_feed_links"]

    @admin.action(
        description="Renew feed links (the team's and each monitor's)",
        permissions=["change"],
    )
    def renew_team_feed_links(self, request: HttpRequest, queryset: QuerySet) -> None:
        for team in queryset:
            renew_feed_links(_admin(request), team)
            self.message_user(
                request,
                f"New feed links for {team.name}: the old ones no longer work.",
                messages.SUCCESS,
            )

    def deleted_along(self, objs: list[Team]) -> list[QuerySet]:
        return [
            Monitor.objects.filter(team__in=objs),
            Check.objects.filter(monitor__team__in=objs),
            PageResult.objects.filter(check_run__monitor__team__in=objs),
            Delivery.objects.filter(
                Q(monitor__team__in=objs) | Q(channel__team__in=objs)
            ),
            Membership.objects.filter(team__in=objs),
            ApiKey.objects.filter(team__in=objs),
            Channel.objects.filter(team__in=objs),
            Invitation.objects.filter(team__in=objs),
            Activity.objects.filter(team__in=objs),
        ]

    # As a monitor's delete: its monitors' history first, a batch a
    # transaction, then the team (checks.deleting.delete_for_good).
    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: Any = None
    ) -> HttpResponse:
        # Django runs a confirmed delete_view in one transaction: the
        # batches go before it, once the delete is confirmed and allowed.
        if request.method == "POST" and request.POST.get("post"):
            team = self.get_object(request, object_id)
            if team is not None and self.has_delete_permission(request, team):
                _, _, refused, protected = self.get_deleted_objects([team], request)
                if not refused and not protected:
                    delete_history(Monitor.objects.of_teams([team.pk]))
        return super().delete_view(request, object_id, extra_context)

    def delete_model(self, request: HttpRequest, obj: Team) -> None:
        self.delete_queryset(request, Team.objects.filter(pk=obj.pk))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        # Outside a transaction for the bulk action; nothing left to do here
        # for delete_view, which took the history before its own.
        ids = list(queryset.values_list("pk", flat=True))
        teams = Team.objects.filter(pk__in=ids)
        delete_for_good(Monitor.objects.of_teams(ids), lambda: delete_teams(teams))

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
                ai_requests=_ai_this_month(Sum("requests")),
                ai_tokens=_ai_this_month(
                    Sum(F("prompt_tokens") + F("completion_tokens"))
                ),
                ai_unmeasured=_ai_this_month(Sum("unmeasured")),
            )
        )

    @admin.display(description="AI use this month", ordering="ai_tokens")
    def ai_use(self, team: Team) -> str:
        now = timezone.now()
        if not hasattr(team, "ai_tokens"):  # a team being added
            return "—"
        use = MonthUse(
            team.ai_requests, team.ai_tokens, team.ai_unmeasured, month_start(now)
        )
        return use.words[:1].upper() + use.words[1:]

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
            record(_admin(request), team, Kind.SECRET_ROTATED)
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
