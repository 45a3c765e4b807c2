"""The team page (members, roles, invitations) and the invitation link.

Thin: the rules live on the models (Membership.can, Membership.change_role,
Invitation.accept); team_view checks the role before a view runs."""

from __future__ import annotations

import logging
import smtplib
import uuid
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth.decorators import login_not_required
from django.db import transaction
from django.db.models import Case, When
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from checks import storage
from checks.ai import llm_available
from checks.ai.allowance import MonthUse
from checks.notify import digests
from config.mail import not_sent_reason
from monitors import clock
from monitors.dashboard.base import Action, DashboardRequest, forbidden, team_view
from monitors.dashboard.context import switch_team
from monitors.models import LastOwnerError, Membership, Monitor, Team
from monitors.schedule import zone_names
from teams.activity import Actor, Kind, record
from teams.emails import invitation_url, send_invitation
from teams.forms import (
    ActivityRetentionForm,
    InviteForm,
    JoinForm,
    RoleForm,
    TimeZoneForm,
)
from teams.members import (
    RoleChange,
    member_joined,
    member_left,
    renew_feed_links,
    role_change,
    role_changed,
    with_keys_made,
    with_removable,
)
from teams.models import (
    Activity,
    Invitation,
    InvitationError,
    keys_stop_words,
    listed,
)

logger = logging.getLogger(__name__)

# Signs the invitee in after they made their account (axes' backend only
# counts failures; it never signs anyone in).
SIGN_IN_BACKEND = "django.contrib.auth.backends.ModelBackend"
FEED_LINKS_RENEWED = (
    "The team's feed links are new, the team's and each monitor's: give them "
    "to everyone who follows the feeds."
)


def _team_page(
    request: DashboardRequest,
    invite_form: InviteForm | None = None,
    retention_form: ActivityRetentionForm | None = None,
    zone_form: TimeZoneForm | None = None,
    status: int = 200,
) -> HttpResponse:
    members = (
        Membership.objects.filter(team=request.team)
        .select_related("user")
        .order_by(
            # Owners first, then editors, then viewers.
            Case(
                When(role=Membership.Role.OWNER, then=0),
                When(role=Membership.Role.EDITOR, then=1),
                default=2,
            ),
            "user__username",
        )
    )
    memberships = with_removable(with_keys_made(members))
    now = timezone.now()
    pending = (
        Invitation.objects.filter(team=request.team)
        .pending(now)
        .select_related("invited_by")
    )
    # Shown until someone invites again or removes them: otherwise the owner
    # never learns that the person did not join.
    lapsed = Invitation.objects.lapsed(now, request.team).select_related("invited_by")
    # Administrators can still do everything in the Django admin.
    admin_url = (
        reverse("admin:monitors_team_change", args=[request.team.pk])
        if request.user.has_perm("monitors.change_team")
        else None
    )
    context = {
        "memberships": memberships,
        "invitations": pending,
        "lapsed_invitations": lapsed,
        "invite_form": invite_form or InviteForm(team=request.team),
        "retention_form": retention_form
        or ActivityRetentionForm(
            initial={"activity_retention_days": request.team.activity_retention_days}
        ),
        "zone_form": zone_form
        or TimeZoneForm(initial={"time_zone": clock.team_zone(request.team)}),
        "timezones": zone_names(),
        "roles": Membership.Role.choices,
        "admin_url": admin_url,
        "history": storage.team_usage(request.team),
        "ai_use": MonthUse.of_team(request.team, now) if llm_available() else None,
        "gone_since_feed_links": _gone_since_feed_links(request),
    }
    return render(request, "teams/team_members.html", context, status=status)


def _gone_since_feed_links(request: DashboardRequest) -> str:
    """For owners: who left, unasked about the feed links, since they were
    last all made new ("eddie left the team"); "" when nobody did."""
    if not request.membership.can(Action.MANAGE):
        return ""
    gone = Activity.objects.gone_since_feed_links_renewed(request.team)
    return listed([entry.departure_words for entry in gone])


@require_GET
@team_view
def team_members(request: DashboardRequest) -> HttpResponse:
    return _team_page(request)


@require_POST
@team_view(needs=Action.MANAGE)
def team_invite(request: DashboardRequest) -> HttpResponse:
    form = InviteForm(request.POST, team=request.team)
    if not form.is_valid():
        return _team_page(request, invite_form=form, status=400)
    invitation, token = Invitation.issue(
        request.team,
        form.cleaned_data["email"],
        form.cleaned_data["role"],
        request.user,
        timezone.now(),
    )
    replaced = (
        " The link sent before no longer works." if invitation.replaced_waiting else ""
    )
    _send(request, invitation, token, sent="Invitation sent to", replaced=replaced)
    return redirect("team-members")


def _send(
    request: DashboardRequest,
    invitation: Invitation,
    token: str,
    sent: str,
    replaced: str = "",
) -> None:
    """Record and e-mail a new invitation; when the mail cannot leave, the
    owner gets the link to pass on."""
    record(Actor.of(request), request.team, Kind.INVITATION_SENT,
           email=invitation.email, role=invitation.role)  # fmt: skip
    try:
        send_invitation(invitation, token)
    except (OSError, smtplib.SMTPException) as exc:
        logger.warning("Invitation e-mail to %s not sent: %s", invitation.email, exc)
        messages.warning(
            request,
            f"The invitation for {invitation.email} is ready, but the e-mail could "
            f"not be sent. Give them this link yourself: {invitation_url(token)}",
        )
    else:
        if not_sent_reason():
            # The log backend counts the e-mail as sent, yet it reaches no one.
            messages.warning(
                request,
                f"The invitation for {invitation.email} is ready, but this server "
                "does not send e-mail (it writes it to its log). Give them this "
                f"link yourself: {invitation_url(token)}{replaced}",
            )
            return
        messages.success(request, f"{sent} {invitation.email}.{replaced}")


@require_POST
@team_view(needs=Action.MANAGE)
def team_retention(request: DashboardRequest) -> HttpResponse:
    form = ActivityRetentionForm(request.POST)
    if not form.is_valid():
        return _team_page(request, retention_form=form, status=400)
    days = form.cleaned_data["activity_retention_days"]
    was = request.team.activity_retention_days
    if (
        Team.objects.filter(pk=request.team.pk)
        .exclude(activity_retention_days=days)
        .update(activity_retention_days=days)
    ):
        record(Actor.of(request), request.team, Kind.TEAM_EDITED,
               setting="activity_retention_days", value=days, was=was)  # fmt: skip
    messages.success(request, f"Activity is now kept for {days} days.")
    return redirect("team-members")


@require_POST
@team_view(needs=Action.MANAGE)
def team_time_zone(request: DashboardRequest) -> HttpResponse:
    form = TimeZoneForm(request.POST)
    if not form.is_valid():
        return _team_page(request, zone_form=form, status=400)
    zone = form.cleaned_data["time_zone"]
    was = request.team.time_zone or "UTC, not yet chosen"
    with transaction.atomic():
        changed = (
            Team.objects.filter(pk=request.team.pk)
            .exclude(time_zone=zone)
            .update(time_zone=zone)
        )
        if changed:
            request.team.time_zone = zone
            digests.reschedule_team(request.team, timezone.now())
            record(Actor.of(request), request.team, Kind.TEAM_EDITED,
                   setting="time_zone", value=zone, was=was)  # fmt: skip
    messages.success(request, f"Digests now keep their time of day in {zone}.")
    return redirect("team-members")


@require_POST
@team_view(needs=Action.MANAGE)
def team_second_factor(request: DashboardRequest) -> HttpResponse:
    required = request.POST.get("required") == "on"
    if (
        Team.objects.filter(pk=request.team.pk)
        .exclude(require_second_factor=required)
        .update(require_second_factor=required)
    ):
        record(Actor.of(request), request.team, Kind.TEAM_EDITED,
               setting="require_second_factor", value=required,
               was=not required)  # fmt: skip
    if required:
        messages.success(
            request,
            "Everyone in the team who signs in with a password now needs a "
            "second factor; those without one set it up at their next page.",
        )
    else:
        messages.success(request, "A second factor is now each person's choice.")
    return redirect("team-members")


def _invitation_for(request: DashboardRequest, invitation_id: int) -> Invitation:
    invitation = Invitation.objects.filter(team=request.team, pk=invitation_id).first()
    if invitation is None:
        raise Http404("Invitation not found")
    return invitation


@require_POST
@team_view(needs=Action.MANAGE)
def invitation_revoke(request: DashboardRequest, invitation_id: int) -> HttpResponse:
    """Withdraw a waiting invitation, or take an expired one off the list."""
    invitation = _invitation_for(request, invitation_id)
    now = timezone.now()
    was_waiting = not invitation.unusable_reason(now)
    if not invitation.revoke(now):
        messages.info(request, "This invitation was already used or withdrawn.")
    elif was_waiting:
        record(Actor.of(request), request.team, Kind.INVITATION_WITHDRAWN,
               email=invitation.email)  # fmt: skip
        messages.success(
            request, f"The invitation for {invitation.email} is withdrawn."
        )
    else:
        messages.success(
            request, f"The expired invitation for {invitation.email} is off the list."
        )
    return redirect("team-members")


@require_POST
@team_view(needs=Action.MANAGE)
def invitation_renew(request: DashboardRequest, invitation_id: int) -> HttpResponse:
    """ "Invite again" on an expired invitation: a new link, same address and
    role. Only while it is listed, so a second click sends no second mail."""
    invitation = _invitation_for(request, invitation_id)
    now = timezone.now()
    if not invitation.unusable_reason(now):
        messages.info(
            request,
            f"The invitation for {invitation.email} has not expired: its link "
            "still works.",
        )
    elif (
        not Invitation.objects.lapsed(now, request.team)
        .filter(pk=invitation.pk)
        .exists()
    ):
        messages.info(request, _not_renewed(request, invitation))
    else:
        fresh, token = invitation.issue_again(request.user, now)
        _send(request, fresh, token, sent="Invitation sent again to")
    return redirect("team-members")


def _not_renewed(request: DashboardRequest, invitation: Invitation) -> str:
    """Why an expired invitation is no longer listed to invite again."""
    if invitation.accepted_at is not None or invitation.revoked_at is not None:
        return "This invitation was already used or removed from the list."
    if invitation.email.lower() in request.team.member_emails():
        return f"{invitation.email} is in the team already."
    return f"{invitation.email} was invited again already."


def _membership_for(request: DashboardRequest, membership_id: int) -> Membership:
    membership = (
        Membership.objects.filter(team=request.team, pk=membership_id)
        .select_related("user")
        .first()
    )
    if membership is None:
        raise Http404("Member not found")
    return membership


@require_POST
@team_view(needs=Action.MANAGE)
def member_role(request: DashboardRequest, membership_id: int) -> HttpResponse:
    membership = _membership_for(request, membership_id)
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose owner, editor or viewer.")
        return _back_to_team_page(request)
    role = form.cleaned_data["role"]
    if request.POST.get("confirmed") != "yes":
        change = role_change(membership, role, request.user)
        if change.asks:
            return _member_role_question(request, change)
    was = membership.role
    try:
        membership.change_role(role)
    except LastOwnerError as exc:
        messages.error(request, str(exc))
    else:
        revoked = 0
        if membership.role != was:
            revoked = role_changed(Actor.of(request), membership, was)
        yourself = membership.user_id == request.user.pk
        if yourself:
            said = f"You are now {membership.role_words}."
        else:
            said = f"{membership.user.get_username()} is now {membership.role_words}."
        if revoked:
            who = "you" if yourself else "they"
            said += f" {keys_stop_words(revoked, who, writes=True, done=True)}."
        messages.success(request, said)
    return _back_to_team_page(request)


def _back_to_team_page(request: DashboardRequest) -> HttpResponse:
    if request.htmx:
        # The whole page changes (the role, what an owner may do), and the
        # message shows at its top: a page load, not a fragment.
        return HttpResponseClientRedirect(reverse("team-members"))
    return redirect("team-members")


def _member_role_question(
    request: DashboardRequest, change: RoleChange
) -> HttpResponse:
    """Asks before a role change with consequences: a page of its own, or,
    from the Team page's htmx form, the same question in the member's row."""
    template = "teams/member_confirm_role.html"
    if request.htmx:
        template += "#role-question"
    context = {"change": change, "inline": bool(request.htmx)}
    return render(request, template, context)


def _member_remove_question(
    request: DashboardRequest, membership: Membership
) -> HttpResponse:
    asked = (
        with_removable(with_keys_made(Membership.objects.filter(pk=membership.pk)))
        .select_related("user")
        .get()
    )
    if not asked.removable:
        messages.error(request, LastOwnerError.message)
        return redirect("team-members")
    context = {"member": asked, "leaving": asked.user_id == request.user.pk}
    return render(request, "teams/member_confirm_remove.html", context)


@require_http_methods(["GET", "POST"])
@team_view
def member_remove(request: DashboardRequest, membership_id: int) -> HttpResponse:
    """GET asks first (as deleting a monitor does): removing someone also
    revokes the API keys they made, which a stray click must not do. Owners
    remove anyone; everyone may leave."""
    membership = _membership_for(request, membership_id)
    leaving = membership.user_id == request.user.pk
    if not leaving and not request.membership.can(Action.MANAGE):
        return forbidden(request, request.membership, Action.MANAGE)
    if request.method == "GET":
        return _member_remove_question(request, membership)
    # Only an owner removing someone is asked (the question's checkbox);
    # someone leaving leaves the owners a notice on the Team page instead.
    renew = not leaving and request.POST.get("renew_feeds") == "yes"
    try:
        # One transaction: a step of member_left failing (revoking keys,
        # withdrawing invitations, the log) leaves them in, not half gone.
        with transaction.atomic():
            membership.remove()
            revoked = member_left(Actor.of(request), request.team, membership.user)
            if renew:
                renew_feed_links(Actor.of(request), request.team)
    except LastOwnerError as exc:
        messages.error(request, str(exc))
        return redirect("team-members")
    if leaving:
        said = f"You left {request.team.name}."
    else:
        said = f"{membership.user.get_username()} was removed from the team."
    if revoked:
        who = "you" if leaving else "they"
        said += f" {keys_stop_words(revoked, who, done=True)}."
    if renew:
        said += f" {FEED_LINKS_RENEWED}"
    messages.success(request, said)
    if leaving:
        return redirect("monitor-list")
    return redirect("team-members")


# ---------------------------------------------------------------- the link


def _joined(
    request: HttpRequest, invitation: Invitation, membership: Membership
) -> HttpResponse:
    member_joined(Actor.of(request), membership.team, membership.user,
                  role=membership.role, email=invitation.email)  # fmt: skip
    switch_team(request, membership.team_id)
    messages.success(
        request,
        f"Welcome to {membership.team.name}: you are {membership.role_words} here.",
    )
    return redirect("monitor-list")


def _coming_back(url: str, request: HttpRequest) -> str:
    """`url` with next= this page's path, encoded: a token's "&" or "#" left
    as is would cut the path short and bring the visitor back elsewhere."""
    return url + "?" + urlencode({"next": request.path}, safe="/")


@login_not_required
@require_http_methods(["GET", "POST"])
def invitation_accept(request: HttpRequest, token: str) -> HttpResponse:
    """The link in the invitation e-mail. Signed in: join with this account.
    Signed out: make an account (the invitation's address) and join, or
    sign in first and come back."""
    invitation = Invitation.for_token(token)
    now = timezone.now()
    if invitation is None:
        context = {
            "reason": "This invitation link is not valid. Check that it "
            "was copied whole, or ask for a new invitation."
        }
        return render(request, "teams/invitation.html", context, status=404)
    reason = invitation.unusable_reason(now)
    if reason:
        return render(request, "teams/invitation.html", {"reason": reason}, status=410)
    context: dict[str, Any] = {"invitation": invitation}
    if request.user.is_authenticated:
        # Already in the team (an owner trying the link before sending it on):
        # joining would change nothing but use the link up for the invitee.
        member = Membership.objects.filter(
            team=invitation.team, user=request.user
        ).first()
        if member is not None:
            context["member"] = member
            status = 409 if request.method == "POST" else 200
            return render(request, "teams/invitation.html", context, status=status)
        if not invitation.is_for(request.user):
            # Another person's invitation: they sign in as the invitee or ask
            # for one of their own; the address is not told to them whole.
            context["wrong_account"] = True
            status = 403 if request.method == "POST" else 200
            return render(request, "teams/invitation.html", context, status=status)
        if request.method == "POST":
            try:
                membership = invitation.accept(request.user, now)
                return _joined(request, invitation, membership)
            except InvitationError as exc:
                return render(
                    request, "teams/invitation.html", {"reason": str(exc)}, status=410
                )
        return render(request, "teams/invitation.html", context)
    if not settings.PASSWORD_SIGNIN:
        # No passwords here: the invitee signs in through single sign-on
        # (which makes their account) and comes back to this link.
        context |= {
            "sso_url": _coming_back(reverse("oidc_authentication_init"), request),
            "sso_name": settings.OIDC_PROVIDER_NAME,
        }
        status = 403 if request.method == "POST" else 200
        return render(request, "teams/invitation.html", context, status=status)
    context["sign_in_url"] = _coming_back(reverse("login"), request)
    if get_user_model().objects.filter(email__iexact=invitation.email).exists():
        # They join with the account they have (a second one for the same
        # address would share its password resets and confuse who is who).
        context["has_account"] = True
        status = 409 if request.method == "POST" else 200
        return render(request, "teams/invitation.html", context, status=status)
    form = JoinForm(request.POST or None, email=invitation.email)
    if request.method == "POST" and form.is_valid():
        try:
            with transaction.atomic():
                user = form.save()
                membership = invitation.accept(user, now)
        except InvitationError as exc:
            return render(
                request, "teams/invitation.html", {"reason": str(exc)}, status=410
            )
        login(request, user, backend=SIGN_IN_BACKEND)
        return _joined(request, invitation, membership)
    context["form"] = form
    status = 400 if request.method == "POST" else 200
    return render(request, "teams/invitation.html", context, status=status)


# ---------------------------------------------------------------- activity

ACTIVITY_PER_PAGE = 50


def _cursor(request: HttpRequest) -> int | None:
    try:
        return max(1, int(request.GET.get("before", "")))
    except ValueError:
        return None


@require_GET
@team_view
def team_activity(request: DashboardRequest) -> HttpResponse:
    """The team's activity log, newest first, by person, monitor and kind."""
    entries = Activity.objects.filter(team=request.team)
    members = [
        m.user
        for m in Membership.objects.filter(team=request.team)
        .select_related("user")
        .order_by("user__username")
    ]
    former = list(Activity.objects.former_members(request.team))
    person = next(
        (u for u in members + former if str(u.pk) == request.GET.get("person")), None
    )
    if person is not None:
        entries = entries.by_person(person)
    kind = request.GET.get("kind", "")
    if kind in Activity.Kind.values:
        entries = entries.filter(kind=kind)
    else:
        kind = ""
    monitor = None
    try:
        monitor_id = uuid.UUID(request.GET.get("monitor", ""))
    except ValueError:
        pass
    else:
        # A deleted monitor's entries stay readable: the log outlives it.
        monitor = Monitor.objects.filter(team=request.team, pk=monitor_id).first()
        if monitor is None:
            raise Http404("Monitor not found")
        entries = entries.filter(monitor=monitor)
    rows = entries.page(_cursor(request), ACTIVITY_PER_PAGE)
    shown = rows[:ACTIVITY_PER_PAGE]
    for entry in shown:
        entry.shown_address = entry.address_seen_by(request.membership)  # type: ignore[attr-defined]
    filters = {
        "person": str(person.pk) if person else "",
        "kind": kind,
        "monitor": str(monitor.pk) if monitor else "",
    }
    older = None
    if len(rows) > ACTIVITY_PER_PAGE:
        older = "?" + urlencode(
            {k: v for k, v in filters.items() if v} | {"before": shown[-1].pk}
        )
    context = {
        "entries": shown,
        "members": members,
        "former_members": former,
        "kinds": Activity.Kind.choices,
        "filters": filters,
        "filtering": any(filters.values()),
        "filtered_monitor": monitor,
        "older_url": older,
        "paged": "before" in request.GET,
    }
    return render(request, "teams/activity.html", context)
