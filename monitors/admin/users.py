"""People's accounts in the admin: Django's own user pages, where deleting an
account keeps the rules of the Team page. A team's only owner is not deleted
(the team would be left with nobody who may manage it: give it another owner
first; or, alone in it, with nobody at all while its monitors go on checking:
delete the team first), and each team the person leaves says so in its
activity log, their keys there revoked (teams.members.member_left).

Their second factors (django-otp's authenticators and recovery codes) are
shown and may be deleted (a lost phone), never added or changed: a device
whose secret an administrator chose, or their own moved to someone else,
would let them sign in as that person."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html
from django_otp.plugins.otp_static.admin import StaticDeviceAdmin
from django_otp.plugins.otp_static.models import StaticDevice
from django_otp.plugins.otp_totp.admin import TOTPDeviceAdmin
from django_otp.plugins.otp_totp.models import TOTPDevice

from monitors.admin.shared import admin_link
from monitors.admin.teams import _admin
from monitors.models import Membership, Monitor, Team
from teams import second_factor
from teams.activity import Kind, record_in_their_teams
from teams.members import member_left
from teams.models import listed

User = get_user_model()
# Importing django-otp's admin modules above registered their models.
admin.site.unregister([User, TOTPDevice, StaticDevice])


class TheirTeamsInline(admin.TabularInline):
    """The teams a person is in, with their role: shown here for whoever
    decides to switch off or delete the account, changed on each team's page
    (where the change is logged and a team keeps an owner)."""

    model = Membership
    extra = 0
    can_delete = False
    fields = ["team_link", "role", "created_at"]
    readonly_fields = fields
    verbose_name = "team"
    verbose_name_plural = "teams"

    def get_queryset(self, request: HttpRequest) -> QuerySet[Membership]:
        return super().get_queryset(request).select_related("team", "user")

    @admin.display(description="Team")
    def team_link(self, membership: Membership) -> str:
        return admin_link(membership.team)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(User)
class AccountAdmin(UserAdmin):
    inlines = [TheirTeamsInline]

    def get_deleted_objects(
        self, objs: Any, request: HttpRequest
    ) -> tuple[list[Any], dict[str, int], set[str], list[Any]]:
        # Django shows the "protected" rows and refuses the deletion, on the
        # delete page and for "delete selected" alike.
        objs = list(objs)
        deleted, counts, perms_needed, protected = super().get_deleted_objects(
            objs, request
        )
        with transaction.atomic():
            ownerless = list(Team.objects.left_ownerless_by(*objs))
        protected = list(protected) + [_left_ownerless(team) for team in ownerless]
        return deleted, counts, perms_needed, protected

    def save_model(
        self, request: HttpRequest, obj: Any, form: Any, change: bool
    ) -> None:
        """Switching off a team's last owner who can sign in is done, unlike
        deleting them: it is the administrator's first move against a stolen
        account, undone by switching it back on. They are told what it leaves
        each such team without; a team nobody else can sign in to keeps its
        monitors checking and sending (paused, they would stay paused when
        the account is switched back on), and the message says so, with
        where to pause them or delete the team."""
        super().save_model(request, obj, form, change)
        if not change or obj.is_active or "is_active" not in form.changed_data:
            return
        for team in Team.objects.left_ownerless_by_switching_off(obj):
            self.message_user(request, _switched_off(obj, team), messages.WARNING)

    def user_change_password(
        self, request: HttpRequest, id: str, form_url: str = ""
    ) -> HttpResponse:
        """Django's page, and a new password set there in each of the
        person's teams' activity log (as one they change themselves is)."""
        person = self.get_object(request, unquote(id))
        before = person.password if person is not None else None
        response = super().user_change_password(request, id, form_url)
        if person is not None and request.method == "POST":
            person.refresh_from_db(fields=["password"])
            if person.password != before:
                record_in_their_teams(_admin(request), Kind.PASSWORD_CHANGED,
                                      person=person,
                                      member=person.get_username())  # fmt: skip
        return response

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self.delete_queryset(request, User.objects.filter(pk=obj.pk))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        with transaction.atomic():
            memberships = Membership.objects.filter(user__in=queryset)
            for membership in memberships.select_related("team", "user"):
                member_left(_admin(request), membership.team, membership.user,
                            account_deleted=True)  # fmt: skip
            # Out of their teams before the account goes: the removal is
            # recorded once, by the administrator, not again by Pagewatch
            # (teams.members.account_deleted).
            memberships.delete()
            super().delete_queryset(request, queryset)


def _switched_off(person: Any, team: Team) -> str:
    """What switching off `person` leaves `team` without, they being its last
    owner who can sign in."""
    name = person.get_username()
    if team.has_others:
        return (
            f"{name} was the only owner of {team.name}, which has other members: "
            "while the account is switched off nobody there can invite people, "
            "change roles or give the team another owner. Make one of them an "
            "owner on the team's page here."
        )
    checking = Monitor.objects.for_team(team).filter(status=Monitor.Status.ACTIVE)
    count = checking.count()
    if not count:
        return (
            f"{name} was the only member of {team.name} who can sign in: while "
            "the account is switched off nobody can see the team; none of its "
            "monitors is checking now."
        )
    them = f"its {count} monitor{'s' if count > 1 else ''}, which "
    them += "go on" if count > 1 else "goes on"
    return format_html(
        "{} was the only member of {} who can sign in: while the account is "
        "switched off nobody can see {} checking and sending notifications. "
        '<a href="{}?team__id__exact={}">Pause {}</a> or '
        '<a href="{}">delete the team</a> here.',
        name,
        team.name,
        them,
        reverse("admin:monitors_monitor_changelist"),
        team.pk,
        "them" if count > 1 else "it",
        reverse("admin:monitors_team_delete", args=[team.pk]),
    )


def _left_ownerless(team: Team) -> str:
    """Why the deletion waits for `team`, and what the administrator can do
    about it: give it another owner, or, with nobody else in it, delete it
    (its monitors would go on checking for nobody)."""
    owners = listed(
        list(
            Membership.objects.filter(team=team, role=Membership.Role.OWNER)
            .order_by("user__username")
            .values_list("user__username", flat=True)
        )
    )
    if team.has_others:
        return (
            f"{team.name}: its only owner is {owners} (give the team another "
            "owner first)"
        )
    return format_html(
        '{}: its only owner is {}, and nobody else is in it (<a href="{}">delete '
        "the team</a> first)",
        team.name,
        owners,
        reverse("admin:monitors_team_delete", args=[team.pk]),
    )


class ShownNotGiven:
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(TOTPDevice)
class AuthenticatorAdmin(ShownNotGiven, TOTPDeviceAdmin):
    """Deleting a person's authenticator turns their second factor off: each
    of their teams hears of it, as when they turn it off themselves."""

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self.delete_queryset(request, TOTPDevice.objects.filter(pk=obj.pk))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        with transaction.atomic():
            # One not yet confirmed is a setup begun: no second factor yet.
            for device in queryset.filter(confirmed=True).select_related("user"):
                record_in_their_teams(
                    _admin(request),
                    Kind.SECOND_FACTOR_OFF,
                    person=device.user,
                    member=device.user.get_username(),
                )
            super().delete_queryset(request, queryset)


@admin.register(StaticDevice)
class RecoveryCodesAdmin(ShownNotGiven, StaticDeviceAdmin):
    """Deleting a person's recovery codes leaves them no way in if their
    phone is lost: each of their teams hears of it, as of a removed
    authenticator."""

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self.delete_queryset(request, StaticDevice.objects.filter(pk=obj.pk))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        with transaction.atomic():
            for device in queryset.select_related("user"):
                record_in_their_teams(
                    _admin(request),
                    Kind.RECOVERY_CODES_REMOVED,
                    person=device.user,
                    member=device.user.get_username(),
                    app_left=second_factor.authenticator(device.user) is not None,
                )
            super().delete_queryset(request, queryset)
